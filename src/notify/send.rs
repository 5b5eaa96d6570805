//! The edge: notifications out of the process.
