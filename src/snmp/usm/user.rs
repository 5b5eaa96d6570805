//! Engine IDs and users: the configuration side of the USM.

use std::fmt;

use super::SecurityLevel;
use super::crypto::{self, AuthProtocol, KeyError, PrivProtocol, localize, password_to_key};
use zeroize::Zeroizing;

/// An snmpEngineID (RFC 3411 §5): 5 to 32 octets.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct EngineId(Vec<u8>);

/// Why octets or text are no snmpEngineID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineIdError {
    /// Not 5 to 32 octets (how many there were).
    Length(usize),
    /// The text is no hex string.
    Hex { text: String, error: KeyError },
}

impl fmt::Display for EngineIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineIdError::Length(n) => write!(f, "an snmpEngineID has 5 to 32 octets, not {n}"),
            EngineIdError::Hex { text, error } => write!(f, "engine ID {text:?}: {error}"),
        }
    }
}

impl std::error::Error for EngineIdError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EngineIdError::Hex { error, .. } => Some(error),
            EngineIdError::Length(_) => None,
        }
    }
}

/// The enterprise number in a generated engine ID. The project has no IANA
/// Private Enterprise Number of its own and borrows nobody's (net-snmp's
/// 8072 belongs to net-snmp); 0 is IANA's "Reserved" entry, assigned to no
/// enterprise, so a generated ID cannot pose as another vendor's. Operators
/// with a number of their own set `engine_id` in the configuration.
pub const ENGINE_ID_ENTERPRISE: u32 = 0;

/// RFC 3411 §5 format 5: "octets, administratively assigned".
const ENGINE_ID_FORMAT_OCTETS: u8 = 5;

/// Random octets after the format octet: 64 bits make two agents' IDs
/// collide with a negligible probability.
const ENGINE_ID_RANDOM: usize = 8;

impl EngineId {
    /// An engine ID given as octets (5..=32, RFC 3411 §5).
    pub fn new(octets: Vec<u8>) -> Result<EngineId, EngineIdError> {
        if !(5..=32).contains(&octets.len()) {
            return Err(EngineIdError::Length(octets.len()));
        }
        Ok(EngineId(octets))
    }

    /// An engine ID from hex (as net-snmp prints it, `0x` prefix optional).
    pub fn from_hex(text: &str) -> Result<EngineId, EngineIdError> {
        let octets = crypto::parse_hex(text).map_err(|error| EngineIdError::Hex {
            text: text.to_string(),
            error,
        })?;
        EngineId::new(octets)
    }

    /// A new engine ID as RFC 3411 §5 lays it out: the enterprise number with
    /// its first bit set, format 5 (octets), then `random` octets.
    pub fn from_random(enterprise: u32, random: [u8; ENGINE_ID_RANDOM]) -> EngineId {
        let mut v = Vec::with_capacity(5 + ENGINE_ID_RANDOM);
        v.extend_from_slice(&(enterprise | 0x8000_0000).to_be_bytes());
        v.push(ENGINE_ID_FORMAT_OCTETS);
        v.extend_from_slice(&random);
        EngineId(v)
    }

    /// [`EngineId::from_random`] with [`ENGINE_ID_ENTERPRISE`] and octets
    /// from the operating system's random source.
    pub fn generate() -> Result<EngineId, getrandom::Error> {
        let mut r = [0u8; ENGINE_ID_RANDOM];
        getrandom::fill(&mut r)?;
        Ok(EngineId::from_random(ENGINE_ID_ENTERPRISE, r))
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Lower-case hex, as net-snmp's `-e` takes it.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Debug for EngineId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EngineId({})", self.to_hex())
    }
}

impl fmt::Display for EngineId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{}", self.to_hex())
    }
}

/// A localized key: wiped when dropped, never printed, never copied but by
/// the crate's own tests.
#[cfg_attr(test, derive(Clone, PartialEq, Eq))]
pub struct Key(Zeroizing<Vec<u8>>);

impl Key {
    pub(super) fn new(octets: Vec<u8>) -> Key {
        Key(Zeroizing::new(octets))
    }
}

impl std::ops::Deref for Key {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({} octets)", self.0.len())
    }
}

/// A USM user with keys localized to one engine ID. It has no `Clone`
/// (but in the crate's own tests): the engine's key store holds the one
/// copy of each key.
#[cfg_attr(test, derive(Clone, PartialEq, Eq))]
pub struct User {
    pub(super) name: Vec<u8>,
    pub(super) auth: Option<(AuthProtocol, Key)>,
    pub(super) privacy: Option<(PrivProtocol, Key)>,
}

impl fmt::Debug for User {
    /// Never prints keys.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("User")
            .field("name", &String::from_utf8_lossy(&self.name))
            .field("auth", &self.auth.as_ref().map(|a| a.0))
            .field("privacy", &self.privacy.as_ref().map(|p| p.0))
            .finish()
    }
}

/// Why a user could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserError {
    /// usmUserName is 1 to 32 octets (SnmpAdminString).
    Name,
    /// Privacy needs authentication (RFC 3414: no priv without auth).
    PrivacyWithoutAuth,
    Auth(KeyError),
    Privacy(KeyError),
}

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UserError::Name => f.write_str("a user name has 1 to 32 octets"),
            UserError::PrivacyWithoutAuth => {
                f.write_str("privacy needs authentication: set auth too")
            }
            UserError::Auth(e) => write!(f, "authentication key: {e}"),
            UserError::Privacy(e) => write!(f, "privacy key: {e}"),
        }
    }
}

impl std::error::Error for UserError {}

impl User {
    /// A user from passphrases, its keys localized to `engine` (1 MB of
    /// hashing per passphrase). The privacy key is derived with the
    /// authentication protocol's hash (RFC 3826 §1.2, RFC 3414 A.2).
    pub fn from_passphrases(
        name: &str,
        auth: Option<(AuthProtocol, &str)>,
        privacy: Option<(PrivProtocol, &str)>,
        engine: &EngineId,
    ) -> Result<User, UserError> {
        // The intermediate keys are wiped as they go.
        let auth_key = match auth {
            Some((proto, pass)) => Some((
                proto,
                localize(
                    proto,
                    &Zeroizing::new(password_to_key(proto, pass).map_err(UserError::Auth)?),
                    engine.as_bytes(),
                ),
            )),
            None => None,
        };
        let priv_key = match (privacy, auth) {
            (None, _) => None,
            (Some(_), None) => return Err(UserError::PrivacyWithoutAuth),
            (Some((pp, pass)), Some((ap, _))) => Some((
                pp,
                localize(
                    ap,
                    &Zeroizing::new(password_to_key(ap, pass).map_err(UserError::Privacy)?),
                    engine.as_bytes(),
                ),
            )),
        };
        User::from_localized_keys(name, auth_key, priv_key)
    }

    /// A user from keys already localized to this engine's ID (as
    /// net-snmp's `createUser -l` takes them). The authentication key has
    /// the hash's length; the privacy key at least the cipher's 16 octets.
    /// The keys are taken over (and wiped when the user goes, or now when
    /// they are refused).
    pub fn from_localized_keys(
        name: &str,
        auth: Option<(AuthProtocol, Vec<u8>)>,
        privacy: Option<(PrivProtocol, Vec<u8>)>,
    ) -> Result<User, UserError> {
        let auth = auth.map(|(p, k)| (p, Key::new(k)));
        let privacy = privacy.map(|(p, k)| (p, Key::new(k)));
        if name.is_empty() || name.len() > 32 {
            return Err(UserError::Name);
        }
        if let Some((proto, key)) = &auth
            && key.len() != proto.key_len()
        {
            return Err(UserError::Auth(KeyError::KeyLength(
                key.len(),
                proto.key_len(),
            )));
        }
        match (&privacy, &auth) {
            (Some(_), None) => return Err(UserError::PrivacyWithoutAuth),
            (Some((proto, key)), Some(_)) if key.len() < proto.key_len() => {
                return Err(UserError::Privacy(KeyError::KeyLength(
                    key.len(),
                    proto.key_len(),
                )));
            }
            _ => {}
        }
        Ok(User {
            name: name.as_bytes().to_vec(),
            auth,
            privacy,
        })
    }

    pub fn name(&self) -> &[u8] {
        &self.name
    }

    pub fn auth_protocol(&self) -> Option<AuthProtocol> {
        self.auth.as_ref().map(|a| a.0)
    }

    pub fn priv_protocol(&self) -> Option<PrivProtocol> {
        self.privacy.as_ref().map(|p| p.0)
    }

    /// The highest level this user's keys allow.
    pub fn max_level(&self) -> SecurityLevel {
        match (&self.auth, &self.privacy) {
            (Some(_), Some(_)) => SecurityLevel::AuthPriv,
            (Some(_), None) => SecurityLevel::AuthNoPriv,
            _ => SecurityLevel::NoAuthNoPriv,
        }
    }
}
