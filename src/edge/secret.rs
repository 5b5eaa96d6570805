//! A secret an edge holds: a community, a passphrase, a key, a password a
//! client sent. Wiped when dropped; its `Debug` prints nothing of it.

use std::fmt;

use serde::{Deserialize, Deserializer};
use zeroize::Zeroizing;

/// A secret: wiped when dropped; its `Debug` prints nothing of it, and
/// no message does.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(Zeroizing<Vec<u8>>);

impl Secret {
    /// The octets, for the one place that uses them.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    /// The text (a secret is read from a TOML string: UTF-8).
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Secret {
        Secret(Zeroizing::new(s.as_bytes().to_vec()))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Secret, D::Error> {
        // The String the TOML parser hands over is wiped once copied.
        let s = Zeroizing::new(String::deserialize(d)?);
        Ok(Secret(Zeroizing::new(s.as_bytes().to_vec())))
    }
}

impl From<Vec<u8>> for Secret {
    fn from(v: Vec<u8>) -> Secret {
        Secret(Zeroizing::new(v))
    }
}
