//! Configuration file (TOML).
