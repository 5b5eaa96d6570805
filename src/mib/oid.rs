//! Object identifiers, ordered numerically sub-identifier by sub-identifier
//! (never as strings).

use std::fmt;
use std::str::FromStr;

/// An SNMP object identifier. `Ord` is the numeric lexicographic order SNMP uses.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Oid(pub Vec<u32>);

impl Oid {
    pub fn new(subids: &[u32]) -> Self {
        Oid(subids.to_vec())
    }
    pub fn as_slice(&self) -> &[u32] {
        &self.0
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// True when `self` is `prefix` or lies below it.
    pub fn starts_with(&self, prefix: &[u32]) -> bool {
        self.0.starts_with(prefix)
    }
    /// A new OID: `self` followed by `tail`.
    pub fn child(&self, tail: &[u32]) -> Oid {
        let mut v = Vec::with_capacity(self.0.len() + tail.len());
        v.extend_from_slice(&self.0);
        v.extend_from_slice(tail);
        Oid(v)
    }
}

impl From<Vec<u32>> for Oid {
    fn from(v: Vec<u32>) -> Self {
        Oid(v)
    }
}

impl From<&[u32]> for Oid {
    fn from(v: &[u32]) -> Self {
        Oid(v.to_vec())
    }
}

impl fmt::Display for Oid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{s}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Oid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Oid({self})")
    }
}

/// Error for a string that is not a dotted OID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseOidError(pub String);

impl fmt::Display for ParseOidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a numeric OID: {:?}", self.0)
    }
}

impl std::error::Error for ParseOidError {}

impl FromStr for Oid {
    type Err = ParseOidError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.strip_prefix('.').unwrap_or(s);
        if t.is_empty() {
            return Ok(Oid::default());
        }
        t.split('.')
            .map(|p| p.parse::<u32>())
            .collect::<Result<Vec<_>, _>>()
            .map(Oid)
            .map_err(|_| ParseOidError(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_not_string_order() {
        let a: Oid = "1.3.6.1.3.117.1.4.1.9".parse().unwrap();
        let b: Oid = "1.3.6.1.3.117.1.4.1.10".parse().unwrap();
        assert!(a < b);
        let p: Oid = "1.3.6.1.3.117.1.4.1".parse().unwrap();
        assert!(p < a);
        assert_eq!(a.to_string(), "1.3.6.1.3.117.1.4.1.9");
        assert!("1.x.3".parse::<Oid>().is_err());
        assert_eq!(".1.3".parse::<Oid>().unwrap(), Oid::new(&[1, 3]));
    }
}
