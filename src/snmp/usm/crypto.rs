//! The USM's cryptographic transforms, each on top of a RustCrypto primitive:
//! password-to-key and key localization (RFC 3414 A.2, RFC 7860 §4.1), the
//! truncated HMACs (RFC 3414 §6/§7 HMAC-SHA-96, RFC 7860 HMAC-SHA-2) and
//! AES-128-CFB (RFC 3826).

use std::fmt;
use std::str::FromStr;

use aes::Aes128;
use cfb_mode::cipher::KeyIvInit;
use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;
use sha2::{Digest, Sha224, Sha256, Sha384, Sha512};

/// Shortest passphrase accepted, as net-snmp has it (`USM_LENGTH_P_MIN`).
pub const MIN_PASSPHRASE: usize = 8;

/// RFC 3414 A.2: the passphrase is repeated over this many octets and hashed.
const EXPANDED_OCTETS: usize = 1_048_576;

/// An authentication protocol: HMAC over the whole message, truncated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AuthProtocol {
    /// usmHMACSHAAuthProtocol (RFC 3414 §7): HMAC-SHA-1, 12 octets.
    Sha1,
    /// usmHMAC128SHA224AuthProtocol (RFC 7860): 16 octets.
    Sha224,
    /// usmHMAC192SHA256AuthProtocol (RFC 7860): 24 octets.
    Sha256,
    /// usmHMAC256SHA384AuthProtocol (RFC 7860): 32 octets.
    Sha384,
    /// usmHMAC384SHA512AuthProtocol (RFC 7860): 48 octets.
    Sha512,
}

/// Every protocol this module implements, for tests and listings.
pub const AUTH_PROTOCOLS: [AuthProtocol; 5] = [
    AuthProtocol::Sha1,
    AuthProtocol::Sha224,
    AuthProtocol::Sha256,
    AuthProtocol::Sha384,
    AuthProtocol::Sha512,
];

impl AuthProtocol {
    /// Octets of msgAuthenticationParameters (the truncated HMAC).
    pub fn mac_len(self) -> usize {
        match self {
            AuthProtocol::Sha1 => 12,
            AuthProtocol::Sha224 => 16,
            AuthProtocol::Sha256 => 24,
            AuthProtocol::Sha384 => 32,
            AuthProtocol::Sha512 => 48,
        }
    }

    /// Octets of a (localized) key: the digest length.
    pub fn key_len(self) -> usize {
        match self {
            AuthProtocol::Sha1 => 20,
            AuthProtocol::Sha224 => 28,
            AuthProtocol::Sha256 => 32,
            AuthProtocol::Sha384 => 48,
            AuthProtocol::Sha512 => 64,
        }
    }

    /// The configuration name, as net-snmp's `-a` spells it.
    pub fn name(self) -> &'static str {
        match self {
            AuthProtocol::Sha1 => "SHA",
            AuthProtocol::Sha224 => "SHA-224",
            AuthProtocol::Sha256 => "SHA-256",
            AuthProtocol::Sha384 => "SHA-384",
            AuthProtocol::Sha512 => "SHA-512",
        }
    }
}

impl fmt::Display for AuthProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a protocol name was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProtocolError {}

impl FromStr for AuthProtocol {
    type Err = ProtocolError;

    /// "SHA" (also "SHA1", "SHA-1"), "SHA-224", "SHA-256", "SHA-384",
    /// "SHA-512", in any case, with or without the dash.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_uppercase().replace('-', "");
        Ok(match norm.as_str() {
            "SHA" | "SHA1" => AuthProtocol::Sha1,
            "SHA224" => AuthProtocol::Sha224,
            "SHA256" => AuthProtocol::Sha256,
            "SHA384" => AuthProtocol::Sha384,
            "SHA512" => AuthProtocol::Sha512,
            "MD5" => {
                return Err(ProtocolError(
                    "MD5 is not supported: HMAC-MD5-96 rests on a broken hash; use SHA-256 \
                     (or SHA for older managers)"
                        .into(),
                ));
            }
            _ => {
                return Err(ProtocolError(format!(
                    "unknown authentication protocol {s:?}: expected SHA, SHA-224, SHA-256, \
                     SHA-384 or SHA-512"
                )));
            }
        })
    }
}

/// A privacy protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PrivProtocol {
    /// usmAesCfb128Protocol (RFC 3826): AES-128 in 128-bit CFB mode.
    Aes128,
}

impl PrivProtocol {
    /// Octets of key the cipher uses (the front of the localized key).
    pub fn key_len(self) -> usize {
        16
    }

    /// Octets of msgPrivacyParameters (the salt).
    pub fn salt_len(self) -> usize {
        8
    }

    pub fn name(self) -> &'static str {
        "AES"
    }
}

impl fmt::Display for PrivProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PrivProtocol {
    type Err = ProtocolError;

    /// "AES" (also "AES128", "AES-128").
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_uppercase().replace('-', "");
        match norm.as_str() {
            "AES" | "AES128" => Ok(PrivProtocol::Aes128),
            "DES" | "CBCDES" => Err(ProtocolError(format!(
                "{s} is not supported: CBC-DES has a 56-bit key, found by exhaustive search \
                 in about a day; use AES"
            ))),
            "3DES" | "AES192" | "AES256" | "AES192C" | "AES256C" => Err(ProtocolError(format!(
                "{s} is not supported: only AES-128 (RFC 3826) is a standard USM privacy \
                     protocol; use AES"
            ))),
            _ => Err(ProtocolError(format!(
                "unknown privacy protocol {s:?}: expected AES"
            ))),
        }
    }
}

/// Why a passphrase or key was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// Fewer than [`MIN_PASSPHRASE`] characters.
    PassphraseTooShort,
    /// A localized key of the wrong length for its protocol: (got, expected).
    KeyLength(usize, usize),
    /// Not an even number of hex digits (an optional `0x` prefix allowed).
    NotHex,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::PassphraseTooShort => write!(
                f,
                "passphrase shorter than {MIN_PASSPHRASE} characters (net-snmp refuses it too)"
            ),
            KeyError::KeyLength(got, want) => {
                write!(f, "key of {got} octets, the protocol needs {want}")
            }
            KeyError::NotHex => f.write_str("not a hex string"),
        }
    }
}

impl std::error::Error for KeyError {}

/// Runs `$body` with `$h` the hash type of `$proto`: the one place that
/// maps a protocol to its RustCrypto type, one line a protocol.
macro_rules! with_hash {
    ($proto:expr, $h:ident => $body:expr) => {
        with_hash!(@each $proto, $h, $body;
            Sha1 => Sha1,
            Sha224 => Sha224,
            Sha256 => Sha256,
            Sha384 => Sha384,
            Sha512 => Sha512,
        )
    };
    (@each $proto:expr, $h:ident, $body:expr; $($p:ident => $t:ty,)*) => {
        match $proto {
            $(AuthProtocol::$p => {
                type $h = $t;
                $body
            })*
        }
    };
}

fn expand_and_hash<D: Digest>(passphrase: &[u8]) -> Vec<u8> {
    let mut h = D::new();
    let mut chunk = [0u8; 64];
    let mut at = 0usize;
    for _ in 0..EXPANDED_OCTETS / chunk.len() {
        for b in chunk.iter_mut() {
            *b = passphrase[at];
            at = (at + 1) % passphrase.len();
        }
        h.update(chunk);
    }
    h.finalize().to_vec()
}

fn localize_with<D: Digest>(key: &[u8], engine_id: &[u8]) -> Vec<u8> {
    let mut h = D::new();
    h.update(key);
    h.update(engine_id);
    h.update(key);
    h.finalize().to_vec()
}

/// Ku: the passphrase repeated over 1 MB and hashed (RFC 3414 A.2). Costs
/// one hash of 1 MB: call it once per user at start, never per message.
pub fn password_to_key(proto: AuthProtocol, passphrase: &str) -> Result<Vec<u8>, KeyError> {
    let p = passphrase.as_bytes();
    if passphrase.chars().count() < MIN_PASSPHRASE {
        return Err(KeyError::PassphraseTooShort);
    }
    Ok(with_hash!(proto, H => expand_and_hash::<H>(p)))
}

/// Kul = H(Ku ‖ snmpEngineID ‖ Ku) (RFC 3414 §2.6, A.2.2).
pub fn localize(proto: AuthProtocol, key: &[u8], engine_id: &[u8]) -> Vec<u8> {
    with_hash!(proto, H => localize_with::<H>(key, engine_id))
}

/// Parses a key given in hex (`0x` prefix and `:` separators allowed).
pub fn parse_hex(text: &str) -> Result<Vec<u8>, KeyError> {
    let t = text.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    // The digits are the key too: wiped when dropped.
    let digits: zeroize::Zeroizing<Vec<u8>> =
        zeroize::Zeroizing::new(t.bytes().filter(|b| *b != b':').collect());
    if digits.is_empty() || !digits.len().is_multiple_of(2) {
        return Err(KeyError::NotHex);
    }
    digits
        .chunks(2)
        .map(|pair| {
            let hi = (pair[0] as char).to_digit(16);
            let lo = (pair[1] as char).to_digit(16);
            match (hi, lo) {
                (Some(h), Some(l)) => Ok((h * 16 + l) as u8),
                _ => Err(KeyError::NotHex),
            }
        })
        .collect()
}

fn hmac_with<M: Mac + KeyInit>(key: &[u8], parts: &[&[u8]]) -> M {
    // HMAC takes keys of any length: new_from_slice cannot fail.
    let mut m = <M as KeyInit>::new_from_slice(key).expect("HMAC accepts any key length");
    for p in parts {
        m.update(p);
    }
    m
}

/// The truncated HMAC of `msg` (whose msgAuthenticationParameters hold
/// zeros) under a localized key, written into `out` (`mac_len` octets).
pub fn sign(proto: AuthProtocol, key: &[u8], msg: &[u8], out: &mut [u8]) {
    fn put<M: Mac + KeyInit>(key: &[u8], msg: &[u8], out: &mut [u8]) {
        let tag = hmac_with::<M>(key, &[msg]).finalize().into_bytes();
        let n = out.len().min(tag.len());
        out[..n].copy_from_slice(&tag[..n]);
    }
    let out = &mut out[..proto.mac_len()];
    with_hash!(proto, H => put::<Hmac<H>>(key, msg, out))
}

/// Whether `tag` is the truncated HMAC of the concatenation of `msg`'s
/// parts (compared in constant time).
pub fn verify(proto: AuthProtocol, key: &[u8], msg: &[&[u8]], tag: &[u8]) -> bool {
    if tag.len() != proto.mac_len() {
        return false;
    }
    fn check<M: Mac + KeyInit>(key: &[u8], msg: &[&[u8]], tag: &[u8]) -> bool {
        hmac_with::<M>(key, msg).verify_truncated_left(tag).is_ok()
    }
    with_hash!(proto, H => check::<Hmac<H>>(key, msg, tag))
}

/// RFC 3826 §3.1.2.1: IV = engineBoots ‖ engineTime ‖ salt, all big-endian.
fn aes_iv(boots: u32, time: u32, salt: &[u8; 8]) -> [u8; 16] {
    let mut iv = [0u8; 16];
    iv[..4].copy_from_slice(&boots.to_be_bytes());
    iv[4..8].copy_from_slice(&time.to_be_bytes());
    iv[8..].copy_from_slice(salt);
    iv
}

/// Encrypts `buf` in place with AES-128-CFB (no padding: the ciphertext
/// is as long as the plaintext). `key` is the localized privacy key (at
/// least 16 octets; its first 16 are the AES key).
pub fn aes_encrypt(key: &[u8], boots: u32, time: u32, salt: &[u8; 8], buf: &mut [u8]) {
    let iv = aes_iv(boots, time, salt);
    cfb_mode::Encryptor::<Aes128>::new_from_slices(&key[..16], &iv)
        .expect("16-octet key and IV")
        .encrypt(buf);
}

/// Decrypts `buf` in place (the inverse of [`aes_encrypt`]).
pub fn aes_decrypt(key: &[u8], boots: u32, time: u32, salt: &[u8; 8], buf: &mut [u8]) {
    let iv = aes_iv(boots, time, salt);
    cfb_mode::Decryptor::<Aes128>::new_from_slices(&key[..16], &iv)
        .expect("16-octet key and IV")
        .decrypt(buf);
}
