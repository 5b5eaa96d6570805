//! Tests of the fabric's drivers as a whole.

mod sweep_driver;
