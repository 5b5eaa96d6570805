//! The MIB side: OIDs, values, SNMP error codes and the handler interface that
//! both the AgentX session and the built-in SNMP responder serve from.

pub mod bulk;
pub mod events;
pub mod face;
#[cfg(test)]
pub mod fixed;
pub mod index;
pub mod oid;
pub mod rate;
pub mod read;
pub mod schema;
pub mod set;
pub mod tables;
pub mod value;
pub mod view;

pub use oid::Oid;
pub use value::{Value, VarBind};

use std::sync::atomic::{AtomicU64, Ordering};

use crate::edge::refusal::{RefusalCounts, RefusalFigures};

/// Counters of the built-in SNMP endpoint, kept by the responder and shown
/// by the pmAgent scalars (after snmpInPkts and its kin of SNMPv2-MIB) and
/// `infiniband_agent_snmp_*`.
#[derive(Debug, Default)]
pub struct EndpointCounters {
    /// Datagrams received.
    pub in_packets: AtomicU64,
    /// Responses and Reports sent.
    pub out_packets: AtomicU64,
    /// Responses the socket would not send.
    pub send_errors: AtomicU64,
    /// Datagrams dropped unanswered, by the kinds of
    /// [`crate::edge::refusal::KINDS`] the SNMP edge refuses for.
    pub refused: RefusalCounts,
}

/// A reading of [`EndpointCounters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndpointFigures {
    pub in_packets: u64,
    pub out_packets: u64,
    pub send_errors: u64,
    pub refused: RefusalFigures,
}

impl EndpointCounters {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Every counter's value (each read on its own).
    pub fn snapshot(&self) -> EndpointFigures {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        EndpointFigures {
            in_packets: load(&self.in_packets),
            out_packets: load(&self.out_packets),
            send_errors: load(&self.send_errors),
            refused: self.refused.figures(),
        }
    }
}

wire_enum! {
    /// SNMP error-status values, named as RFC 3416 section 3 names them;
    /// AgentX carries them unchanged in a Response's `res.error` field (RFC
    /// 2741 section 6.2.16).
    pub enum ErrorStatus: u16, from_u16 {
        NoError = 0 => "noError",
        TooBig = 1 => "tooBig",
        NoSuchName = 2 => "noSuchName",
        BadValue = 3 => "badValue",
        ReadOnly = 4 => "readOnly",
        GenErr = 5 => "genErr",
        NoAccess = 6 => "noAccess",
        WrongType = 7 => "wrongType",
        WrongLength = 8 => "wrongLength",
        WrongEncoding = 9 => "wrongEncoding",
        WrongValue = 10 => "wrongValue",
        NoCreation = 11 => "noCreation",
        InconsistentValue = 12 => "inconsistentValue",
        ResourceUnavailable = 13 => "resourceUnavailable",
        CommitFailed = 14 => "commitFailed",
        UndoFailed = 15 => "undoFailed",
        AuthorizationError = 16 => "authorizationError",
        NotWritable = 17 => "notWritable",
        InconsistentName = 18 => "inconsistentName",
    }
}

/// A SET failure: the status and the 1-based index of the varbind at fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetError {
    pub status: ErrorStatus,
    pub index: u16,
}

/// Identifies one SET transaction across TestSet/CommitSet/UndoSet/CleanupSet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SetTxn {
    pub session_id: u32,
    pub transaction_id: u32,
}

/// What a protocol front end (AgentX session, SNMP responder) asks of the MIB.
/// Every method answers from memory: none may wait on the fabric except
/// `commit_set`, which has a deadline well under the master's 1 s timeout.
pub trait MibHandler: Send + Sync {
    /// RFC 2741 7.2.3.1: the value, or NoSuchObject / NoSuchInstance.
    fn get(&self, oid: &Oid) -> Value;

    /// Several Gets answered together (one request PDU): an implementation
    /// over snapshots answers them all from the same snapshot.
    fn get_many(&self, oids: &[Oid]) -> Vec<Value> {
        oids.iter().map(|o| self.get(o)).collect()
    }

    /// RFC 2741 7.2.3.2: the first instance after `start` (at `start` too when
    /// `include`), strictly before `end` when `end` is given. `None` means
    /// endOfMibView for this range.
    fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind>;

    /// Phase 1: check every varbind and reserve. Default: nothing is writable.
    fn test_set(&self, _txn: SetTxn, varbinds: &[VarBind]) -> Result<(), SetError> {
        let _ = varbinds;
        Err(SetError {
            status: ErrorStatus::NotWritable,
            index: 1,
        })
    }
    /// Phase 2: apply what `test_set` reserved.
    fn commit_set(&self, _txn: SetTxn) -> Result<(), SetError> {
        Err(SetError {
            status: ErrorStatus::CommitFailed,
            index: 0,
        })
    }
    /// Undo what `commit_set` applied.
    fn undo_set(&self, _txn: SetTxn) -> Result<(), SetError> {
        Err(SetError {
            status: ErrorStatus::UndoFailed,
            index: 0,
        })
    }
    /// Release the reservation; no answer is sent.
    fn cleanup_set(&self, _txn: SetTxn) {}
    /// The AgentX session `session_id` closed (or the connection to the
    /// master was lost): drop every SET reservation its transactions made.
    fn session_closed(&self, _session_id: u32) {}
}

#[cfg(test)]
mod tests {
    use super::ErrorStatus;

    #[test]
    fn error_status_codes_round_trip() {
        for v in 0..=u16::MAX {
            match ErrorStatus::from_u16(v) {
                Some(e) => assert_eq!(e as u16, v),
                None => assert!(v > 18, "{v} must be named"),
            }
        }
        assert_eq!(ErrorStatus::from_u16(17), Some(ErrorStatus::NotWritable));
    }

    /// Each code's name is the one RFC 3416 section 3 gives it (the
    /// error-status INTEGER of the PDU), as managers and logs spell it.
    #[test]
    fn error_status_names_are_rfc_3416s() {
        let rfc = "noError(0) tooBig(1) noSuchName(2) badValue(3) readOnly(4) genErr(5) \
                   noAccess(6) wrongType(7) wrongLength(8) wrongEncoding(9) wrongValue(10) \
                   noCreation(11) inconsistentValue(12) resourceUnavailable(13) \
                   commitFailed(14) undoFailed(15) authorizationError(16) notWritable(17) \
                   inconsistentName(18)";
        let named: Vec<String> = (0..=u16::MAX)
            .filter_map(ErrorStatus::from_u16)
            .map(|e| format!("{}({})", e.name(), e as u16))
            .collect();
        assert_eq!(named.join(" "), rfc);
    }
}
