//! The fabric as designed: cabling plans read from files
//! ([`parse`]: ibnetdiscover's output, a CSV cabling table) into the
//! shared [`crate::ib::cabling::Plan`].

pub mod parse;

pub use parse::{MAX_FILE, PlanError, load_plan, parse_plan};
