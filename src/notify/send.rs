//! The edge: notifications out of the process, from the sweeper's thread
//! after each snapshot (never from a request).
//!
//! - [`AgentxSink`]: an AgentX Notify per notification through the
//!   session with snmpd, which sends them to its `trap2sink`, `trapsink`,
//!   `informsink` and `trapsess` targets. The session keeps a bounded queue
//!   while snmpd is away.
//! - [`TrapSink`]: without snmpd, SNMPv2c traps straight to the sinks of
//!   the configuration, from one UDP socket.
//! - [`Notifier`]: the evaluator and a sink; the sweeper calls
//!   [`Notifier::after_sweep`].

use std::net::{SocketAddr, UdpSocket};
use std::time::Instant;

use rasn_snmp::v2::{Pdu, Pdus, Trap, VarBindList};
use rasn_snmp::v2c::Message;
use tracing::{debug, info, warn};

use super::{Evaluator, Event, FAMILIES, Family, NotifyConfig, NotifyFigures, SYS_UPTIME};
use crate::agentx::SessionHandle;
use crate::fabric::cache::Cache;
use crate::ib::Escaped;
use crate::mib::read::timestamp;
use crate::mib::{Oid, Value, VarBind};
use crate::snmp::codec::to_wire_varbind;
use crate::snmp::usm::{SecurityLevel, Usm};
use crate::time::{Due, Throttle};

/// Where notifications go.
pub trait Sink: Send {
    /// Hand one notification on; false when it was lost at once.
    fn send(&mut self, event: &Event) -> bool;
    /// Notifications sent so far (AgentX: written to snmpd).
    fn sent(&self) -> u64;
    /// Notifications lost so far (queue full while snmpd was away, send
    /// errors).
    fn dropped(&self) -> u64;
}

/// Through snmpd: AgentX Notify.
pub struct AgentxSink {
    session: SessionHandle,
    /// Refused by the handle (its channel full, or the session stopped):
    /// the 1st and every 100th are logged.
    refused: Throttle,
}

impl AgentxSink {
    pub fn new(session: SessionHandle) -> AgentxSink {
        AgentxSink {
            session,
            refused: Throttle::nth(100),
        }
    }
}

impl Sink for AgentxSink {
    fn send(&mut self, event: &Event) -> bool {
        match self.session.notify(event.varbinds()) {
            Ok(()) => true,
            Err(e) => {
                if let Some(Due { total, .. }) = self.refused.count() {
                    warn!(
                        "a notification was not queued for snmpd ({e}; {total} refused so far, said once per 100)"
                    );
                }
                false
            }
        }
    }

    fn sent(&self) -> u64 {
        self.session
            .stats()
            .notifies_sent
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn dropped(&self) -> u64 {
        self.refused.total()
            + self
                .session
                .stats()
                .notifies_dropped
                .load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Without snmpd: SNMPv2c traps to each sink, or SNMPv3 traps of one user.
pub struct TrapSink {
    /// One socket per address family the sinks use.
    v4: Option<UdpSocket>,
    v6: Option<UdpSocket>,
    sinks: Vec<SocketAddr>,
    community: String,
    request_id: i32,
    sent: u64,
    failed: u64,
    /// Failed sends: the 1st and every 100th are logged.
    send_errors: Throttle,
    /// SNMPv3: the engine, the user's index in it, and when it booted.
    v3: Option<(Usm, usize, Instant)>,
}

impl TrapSink {
    /// Sockets on ephemeral ports of the unspecified addresses of the
    /// sinks' families.
    pub fn new(sinks: Vec<SocketAddr>, community: String) -> std::io::Result<TrapSink> {
        let bind = |any: &str| UdpSocket::bind(any);
        let v4 = match sinks.iter().any(|s| s.is_ipv4()) {
            true => Some(bind("0.0.0.0:0")?),
            false => None,
        };
        let v6 = match sinks.iter().any(|s| s.is_ipv6()) {
            true => Some(bind("[::]:0")?),
            false => None,
        };
        Ok(TrapSink {
            v4,
            v6,
            sinks,
            community,
            request_id: 1,
            sent: 0,
            failed: 0,
            send_errors: Throttle::nth(100),
            v3: None,
        })
    }

    /// Sends SNMPv3 traps as user `user` of `usm` (the agent's engine,
    /// booted at `booted`) instead of SNMPv2c ones.
    pub fn with_v3(mut self, usm: Usm, user: usize, booted: Instant) -> TrapSink {
        self.v3 = Some((usm, user, booted));
        self
    }

    /// The SNMPv2-Trap PDU: `sysUpTime.0` (the agent's uptime) and
    /// `snmpTrapOID.0` first, then the notification's objects.
    fn pdu(request_id: i32, event: &Event) -> Option<Pdus> {
        let mut vbs = vec![VarBind {
            name: Oid(SYS_UPTIME.to_vec()),
            value: Value::TimeTicks(timestamp(Some(Instant::now()))),
        }];
        vbs.extend(event.varbinds());
        let wire: Option<VarBindList> = vbs.iter().map(to_wire_varbind).collect();
        Some(Pdus::Trap(Trap(Pdu {
            request_id,
            error_status: 0,
            error_index: 0,
            variable_bindings: wire?,
        })))
    }

    /// The SNMPv2c message of a trap.
    pub fn encode(community: &str, request_id: i32, event: &Event) -> Option<Vec<u8>> {
        let msg = Message {
            version: 1.into(),
            community: community.as_bytes().to_vec().into(),
            data: TrapSink::pdu(request_id, event)?,
        };
        rasn::ber::encode(&msg).ok()
    }

    fn message(&mut self, event: &Event) -> Option<Vec<u8>> {
        match &mut self.v3 {
            None => TrapSink::encode(&self.community, self.request_id, event),
            Some((usm, user, booted)) => {
                let time = u32::try_from(booted.elapsed().as_secs()).unwrap_or(u32::MAX);
                let pdu = TrapSink::pdu(self.request_id, event)?;
                usm.trap(*user, SecurityLevel::AuthPriv, pdu, time)
            }
        }
    }
}

impl Sink for TrapSink {
    fn send(&mut self, event: &Event) -> bool {
        self.request_id = self.request_id.wrapping_add(1) & i32::MAX;
        let Some(bytes) = self.message(event) else {
            self.failed += 1;
            return false;
        };
        let mut ok = true;
        for to in &self.sinks {
            let socket = if to.is_ipv4() { &self.v4 } else { &self.v6 };
            let Some(socket) = socket else { continue };
            if let Err(e) = socket.send_to(&bytes, to) {
                self.failed += 1;
                if self.send_errors.count().is_some() {
                    warn!(
                        "cannot send a trap to {to} ({e}; {} failed so far, said once per 100)",
                        self.failed
                    );
                }
                ok = false;
            }
        }
        if ok {
            self.sent += 1;
        }
        ok
    }

    fn sent(&self) -> u64 {
        self.sent
    }

    fn dropped(&self) -> u64 {
        self.failed
    }
}

/// The sink of a notifier kept for the event log alone (notifications off,
/// or nowhere to send them): it sends nothing.
pub struct NoSink;

impl Sink for NoSink {
    fn send(&mut self, _: &Event) -> bool {
        true
    }
    fn sent(&self) -> u64 {
        0
    }
    fn dropped(&self) -> u64 {
        0
    }
}

/// The evaluator and where its notifications go.
pub struct Notifier {
    eval: Evaluator,
    sink: Box<dyn Sink>,
    figures: NotifyFigures,
    /// Where every decision is also written, sent or not.
    events: Option<std::sync::Arc<crate::events::Log>>,
}

impl Notifier {
    pub fn new(cfg: NotifyConfig, sink: Box<dyn Sink>) -> Notifier {
        Notifier {
            eval: Evaluator::new(cfg),
            sink,
            figures: NotifyFigures::default(),
            events: None,
        }
    }

    /// Write every notification decided into `log` too.
    pub fn with_events(mut self, log: std::sync::Arc<crate::events::Log>) -> Notifier {
        self.events = Some(log);
        self
    }

    /// Send the subnet notifications the failover machine's events call
    /// for ([`Evaluator::with_machine_events`]).
    pub fn with_machine_events(mut self, m: std::sync::Arc<crate::fabric::local::Emitted>) -> Self {
        self.eval = self.eval.with_machine_events(m);
        self
    }

    /// Evaluate the snapshot just published, send what it calls for, say
    /// in one line what storm control held back, and store the figures
    /// in the snapshot for the agent scalars.
    pub fn after_sweep(&mut self, cache: &Cache) {
        let snap = cache.load();
        let out = self.eval.evaluate(&snap);
        if let Some(log) = &self.events {
            super::log::record(log, &snap, &out, super::log::wall_ms());
        }
        for e in &out.events {
            debug!(
                notification = e.kind.def().name,
                node = %e.node,
                desc = %Escaped(&e.description),
                port = e.port,
                counter = e.counter,
                value = e.value,
                "notification"
            );
            self.sink.send(e);
        }
        if !out.events.is_empty() {
            info!(
                "notifications sent: {} after sweep {}",
                out.events.len(),
                snap.sweep
            );
        }
        let suppressed = out.suppressed_total();
        if suppressed > 0 {
            let per: Vec<String> = Family::ALL
                .iter()
                .zip(out.suppressed.iter())
                .filter(|(_, n)| **n > 0)
                .map(|(f, n)| format!("{}={n}", f.name()))
                .collect();
            warn!(
                "notifications suppressed by the per-sweep limit of {}: {suppressed} after sweep {} ({})",
                self.eval.config().limit_per_sweep,
                snap.sweep,
                per.join(", ")
            );
        }
        self.figures.suppressed += suppressed;
        self.figures.sent = self.sink.sent();
        self.figures.dropped = self.sink.dropped();
        debug_assert_eq!(out.suppressed.len(), FAMILIES);
        cache.set_notify(self.figures);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::Guid;
    use crate::notify::Kind;

    /// The trap decodes as an SNMPv2c Trap with sysUpTime.0 and
    /// snmpTrapOID.0 first, and arrives at a sink.
    #[test]
    fn a_v2c_trap_reaches_a_sink() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let mut sink = TrapSink::new(vec![rx.local_addr().unwrap()], "traps".into()).unwrap();
        let e = Event::node(Kind::NodeLost, Guid(0x200000), "spine1");
        assert!(sink.send(&e));
        let mut buf = [0u8; 2048];
        let n = rx.recv(&mut buf).unwrap();
        let msg: Message<Pdus> = rasn::ber::decode(&buf[..n]).unwrap();
        assert_eq!(&msg.community[..], b"traps");
        let Pdus::Trap(Trap(pdu)) = msg.data else {
            panic!("not a trap")
        };
        let names: Vec<Vec<u32>> = pdu
            .variable_bindings
            .iter()
            .map(|v| v.name.to_vec())
            .collect();
        assert_eq!(names[0], SYS_UPTIME.to_vec());
        assert_eq!(names[1], crate::notify::SNMP_TRAP_OID.to_vec());
        assert_eq!(names.len(), 4);
        assert_eq!((sink.sent(), sink.dropped()), (1, 0));
    }
}
