//! The fabric as designed: cabling plans read from files ([`parse`]:
//! ibnetdiscover's output, a CSV cabling table) into the shared
//! [`crate::ib::cabling::Plan`], and the comparison of the fabric as found
//! with its plan ([`compare`]), whose verdicts every face reads from the
//! snapshot ([`crate::fabric::cache::Snapshot::plan`]).

pub mod compare;
pub mod parse;
pub mod state;
pub mod watch;

pub use parse::{MAX_FILE, PlanError, load_plan, parse_plan};
