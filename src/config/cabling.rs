//! `[topology]`: the fabric as designed (the cabling plan).

use std::path::PathBuf;

use serde::Deserialize;

use super::path;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct TopologySection {
    /// The cabling plan ([`crate::cabling::load_plan`]: ibnetdiscover's
    /// format or a CSV cabling table); `None` (an empty string in the
    /// file) = none: the fabric as first found is the baseline. A relative
    /// path is relative to the configuration file's directory.
    #[serde(deserialize_with = "path")]
    pub plan: Option<PathBuf>,
}
