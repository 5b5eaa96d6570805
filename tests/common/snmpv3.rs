//! The SNMPv3 endpoint the integration tests start: its configuration (an
//! engine ID and engine file, users, access rules), the net-snmp arguments
//! of each user at its level and the numeric OIDs the tests ask for (a
//! message built by hand: [`ibpm_agentx::rig::plain_v3_message`]).

use std::path::{Path, PathBuf};

/// pmAgentVersion.0 (a STRING in every view of pmAgent).
pub const PM_AGENT_VERSION: &str = "1.3.6.1.3.117.1.9.1.0";
/// pmAgentSweeps.0.
pub const PM_AGENT_SWEEPS: &str = "1.3.6.1.3.117.1.9.3.0";
/// pmAgent, the agent's own scalars.
pub const PM_AGENT: &str = "1.3.6.1.3.117.1.9";
/// pmPortTable.
pub const PORT_TABLE: &str = "1.3.6.1.3.117.1.6";

/// usmStats scalar `n` (RFC 3414: 1 unsupportedSecLevels, 2
/// notInTimeWindows, 3 unknownUserNames, 4 unknownEngineIDs, 5
/// wrongDigests, 6 decryptionErrors).
pub fn usm_stat(n: u32) -> String {
    format!("1.3.6.1.6.3.15.1.1.{n}.0")
}

/// A user of the endpoint, with passphrases: AES privacy where `privacy`
/// is given (authPriv), authentication alone where only `auth` is
/// (authNoPriv), neither (noAuthNoPriv).
#[derive(Clone, Copy, Debug)]
pub struct User<'a> {
    pub name: &'a str,
    /// The protocol as the configuration and net-snmp name it
    /// ("SHA-256", "SHA") and the passphrase.
    pub auth: Option<(&'a str, &'a str)>,
    pub privacy: Option<&'a str>,
}

impl<'a> User<'a> {
    /// SHA-256 and AES, both from `pass`.
    pub const fn auth_priv(name: &'a str, pass: &'a str) -> User<'a> {
        User {
            name,
            auth: Some(("SHA-256", pass)),
            privacy: Some(pass),
        }
    }

    /// Its `[[snmp.user]]` entry.
    pub fn toml(&self) -> String {
        let mut t = format!("[[snmp.user]]\nname = \"{}\"\n", self.name);
        if let Some((proto, pass)) = self.auth {
            t += &format!("auth = \"{proto}\"\nauth_passphrase = \"{pass}\"\n");
        }
        if let Some(pass) = self.privacy {
            t += &format!("privacy = \"AES\"\nprivacy_passphrase = \"{pass}\"\n");
        }
        t
    }

    /// net-snmp's arguments for it at its level.
    pub fn args(&self) -> Vec<String> {
        let level = match (self.auth, self.privacy) {
            (Some(_), Some(_)) => "authPriv",
            (Some(_), None) => "authNoPriv",
            _ => "noAuthNoPriv",
        };
        let mut a = vec!["-v3", "-l", level, "-u", self.name];
        if let Some((proto, pass)) = self.auth {
            a.extend(["-a", proto, "-A", pass]);
        }
        if let Some(pass) = self.privacy {
            a.extend(["-x", "AES", "-X", pass]);
        }
        a.into_iter().map(String::from).collect()
    }
}

/// An agent without AgentX with `settings` (its other sections), an
/// endpoint on `listen` with the engine ID `engine` (hex) and the engine
/// file `engine`, `users`, then `rest` (access rules, more users).
pub fn config_text(
    listen: &str,
    engine: &str,
    settings: &str,
    users: &[User],
    rest: &str,
) -> String {
    let mut t = format!(
        "[agentx]\nenabled = false\n{settings}[snmp]\nlisten = \"{listen}\"\n\
         engine_id = \"{engine}\"\nengine_file = \"engine\"\n"
    );
    for u in users {
        t += &u.toml();
    }
    t + rest
}

/// `text` written to `dir/agent.toml` with `mode`.
pub fn write_config(dir: &Path, text: &str, mode: u32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("agent.toml");
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

/// An engine ID's octets from its hex.
pub fn engine_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}
