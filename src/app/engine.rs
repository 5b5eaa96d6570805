//! The agent's SNMPv3 engine, made once per start for the endpoint and
//! the trap sender.

use tracing::info;

use crate::config::Config;

use super::AppError;

/// The agent's SNMPv3 engine: its ID (configured, kept in the engine file,
/// or generated), its boots (raised in the engine file), and the users
/// with their keys localized to it. Made once per start: the endpoint and
/// the trap sender hold the same engine (one key store, one set of
/// usmStats). It boots (its boots are raised) as the agent starts, so its
/// snmpEngineTime counts from the process's time origin
/// ([`crate::time::origin`]).
pub(super) struct SnmpEngine {
    pub(super) usm: crate::snmp::usm::Usm,
}

pub(super) fn snmp_engine(cfg: &Config) -> Result<SnmpEngine, AppError> {
    use crate::snmp::engine_file;
    let configured = cfg.snmp.engine_id.as_ref();
    let st = match &cfg.snmp.engine_file {
        Some(path) => {
            engine_file::load_and_advance(path, configured).map_err(AppError::EngineFile)?
        }
        None => engine_file::without_file(configured).map_err(AppError::EngineFile)?,
    };
    let (engine, boots) = (st.engine_id, st.boots);
    let users = cfg
        .snmp
        .user
        .iter()
        .map(|u| u.user(&engine))
        .collect::<Result<Vec<_>, _>>()
        .map_err(AppError::User)?;
    info!(
        "SNMPv3: engine ID {engine}, boots {boots}, {} user(s)",
        users.len()
    );
    let usm = crate::snmp::usm::Usm::new(engine, boots, users).map_err(AppError::Usm)?;
    Ok(SnmpEngine { usm })
}
