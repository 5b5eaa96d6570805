//! ibpm-agentx: an AgentX subagent that serves IB-PM-MIB for every node of an
//! InfiniBand fabric from a cache filled by Performance Management MADs.
//!
//! Data flow (see `README.md`): transport (MADs) -> `pm` (attribute codecs) ->
//! `fabric` (discovery, sweeper, cache snapshots) -> `mib` (OID tree) ->
//! `agentx` (codec + session to snmpd) and `snmp` (built-in v2c responder).

pub mod agentx;
pub mod app;
pub mod config;
pub mod fabric;
pub mod mib;
pub mod pm;
pub mod snmp;
pub mod transport;
