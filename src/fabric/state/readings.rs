//! Readings folded into the nodes' records (with fold.rs): a sweep's or a
//! write's replies, DOCA samples, the write path's marks, and the totals
//! the state file keeps.
//!
//! Every reading carries the time its request (or its batch) was sent; a
//! reading older than the one already held for the same port or attribute is
//! dropped, so a sweep reply that was in flight while a write changed the
//! node cannot bring back the value from before the write.

use std::time::Instant;

use tracing::{debug, info};

use super::{FabricState, Flag, Slot};
use crate::fabric::engine::MadOutcome;
use crate::fabric::persist::SavedPort;
use crate::fabric::record::Stamp;
use crate::fabric::{fold, hc};
use crate::ib::Guid;
use crate::pm::class_port_info::WideCounters;
use crate::pm::mad::status::REDIRECT as STATUS_REDIRECT;
use crate::pm::optional::OPTIONAL_ATTRS;
use crate::pm::samples::PortSamplesResultExtended;
use crate::pm::{
    ClassPortInfo, PortCounters, PortCountersExtended, PortSamplesControl, PortSamplesResult,
};
use crate::transport::MadAddr;

impl FabricState {
    /// Fold one reply into the state. `sent` is when the request (or its
    /// batch) was sent, `now` when its outcome came; `answered` records
    /// that the node answered.
    pub fn apply(
        &mut self,
        slot: Slot,
        outcome: MadOutcome,
        (sent, now): (Instant, Instant),
        answered: &mut [bool],
    ) {
        let ni = slot.node();
        let s = &mut self.nodes[ni];
        let guid = s.rec.id.guid;
        let kind = &mut self.kinds[s.kind as usize].1;
        let readings = &mut self.readings;
        let data = match outcome {
            MadOutcome::Reply { status, data } => {
                answered[ni] = true;
                if let Slot::Cpi(_) = slot
                    && status & STATUS_REDIRECT != 0
                {
                    let cpi = ClassPortInfo::decode(&data);
                    if cpi.redirect_lid != 0 {
                        info!(
                            "the PMA of node {guid} redirects to LID {}, QP {:#x}",
                            cpi.redirect_lid, cpi.redirect_qp
                        );
                        s.redirect = Some(Box::new(MadAddr {
                            lid: cpi.redirect_lid,
                            qpn: cpi.redirect_qp,
                            qkey: cpi.redirect_qkey,
                            pkey_index: 0,
                            sl: cpi.redirect_sl,
                        }));
                        return;
                    }
                }
                data
            }
            MadOutcome::Status(st) => {
                answered[ni] = true;
                let h = &mut s.answers;
                // The attribute the node refuses, when this is the first refusal.
                let news = match slot {
                    Slot::SamplesResultExt(_) => {
                        h.no_result_ext = true;
                        None
                    }
                    Slot::SamplesControl(_) | Slot::SamplesResult(_) => h
                        .samples_unsupported()
                        .then_some("PortSamplesControl/Result"),
                    Slot::Optional(_, _, k) => h
                        .optional_unsupported(k, kind)
                        .then_some("an optional attribute"),
                    _ => None,
                };
                if let Some(what) = news {
                    debug!(node = %guid, status = st, attr = slot.attr_id(), "{what} not supported");
                }
                return;
            }
            MadOutcome::Timeout | MadOutcome::Failed(_) => {
                // Silence from a node that answers other MADs is what a
                // PMA does with an attribute it lacks: evidence for the
                // node's kind, once per node and sweep.
                let alive = answered[ni];
                match slot {
                    Slot::SamplesControl(_) => s.answers.samples_missed(),
                    // Asked only of nodes that answer the sample mechanism:
                    // silence is as good as "unsupported".
                    Slot::SamplesResultExt(_) => s.answers.no_result_ext = true,
                    Slot::Optional(_, _, k) => s.answers.optional_missed(k, alive, kind),
                    _ => {}
                }
                return;
            }
        };
        let sent_at = Stamp::from(sent);
        let newer = |held: Option<Stamp>| held.is_none_or(|h| sent_at >= h);
        let at = fold::At {
            now,
            min_secs: hc::rate_min_secs(self.cfg.interval),
        };
        let copies = &mut self.copies;
        match slot {
            Slot::Cpi(_) => {
                s.rec_mut(copies).class_port_info =
                    Some(readings.cpi.intern(ClassPortInfo::decode(&data)));
                s.set(Flag::CpiStale, false);
            }
            Slot::Counters(_, pi) => {
                let wide = s
                    .cpi()
                    .map_or(WideCounters::None, ClassPortInfo::wide_counters);
                if !s
                    .rec
                    .ports()
                    .nth(pi)
                    .is_some_and(|pr| fold::counters_newer(pr, sent))
                {
                    return;
                }
                if let Some(pr) = s.port(pi, copies) {
                    fold::counters(pr, &PortCounters::decode(&data), wide, sent, at);
                }
            }
            Slot::Extended(_, pi) => {
                // A reply that comes after ClassPortInfo was marked stale
                // is read as the node's last ClassPortInfo said.
                let wide = s
                    .rec
                    .class_port_info
                    .as_deref()
                    .map_or(WideCounters::DataAndPackets, ClassPortInfo::wide_counters);
                if let Some(pr) = s.port(pi, copies) {
                    fold::extended(pr, &PortCountersExtended::decode(&data), wide, at);
                }
            }
            Slot::SamplesControl(_) => {
                s.answers.samples_answer(kind);
                if newer(s.samples_at) {
                    s.rec_mut(copies).samples_control =
                        Some(readings.control.intern(PortSamplesControl::decode(&data)));
                }
            }
            Slot::SamplesResult(_) => {
                if newer(s.samples_at) {
                    s.rec_mut(copies).samples_result =
                        Some(readings.result.intern(PortSamplesResult::decode(&data)));
                }
            }
            Slot::SamplesResultExt(_) => {
                if newer(s.samples_at) {
                    s.rec_mut(copies).samples_result_ext = Some(
                        readings
                            .result_ext
                            .intern(PortSamplesResultExtended::decode(&data)),
                    );
                }
            }
            Slot::Optional(_, pi, k) => {
                s.answers.optional_answer(k, kind);
                let cpi_mask = s.cpi().map(|c| c.capability_mask);
                if let Some(pr) = s.port(pi, copies) {
                    if OPTIONAL_ATTRS[k] == crate::pm::mad::attr::PORT_EXTENDED_SPEEDS_COUNTERS {
                        let rs_fec = crate::pm::optional::rs_fec_layout(cpi_mask, pr.link.fec);
                        fold::fec_rates(pr, &data, rs_fec, sent, at);
                    }
                    pr.optional_mut().set(k, &data);
                }
            }
        }
    }

    /// Mark ports as served by DOCA telemetry diag: their data, packet and
    /// discard counters ([`super::doca_ids::DOCA_SLOTS`]) come from
    /// [`FabricState::apply_doca`] from now on, not from PM MADs. Returns
    /// the ports not in the fabric.
    pub fn set_doca_ports(&mut self, ports: &[(Guid, u8)]) -> Vec<(Guid, u8)> {
        let mut missing = Vec::new();
        for &(guid, num) in ports {
            let Some((ni, pi)) = self.port_index(guid, num) else {
                missing.push((guid, num));
                continue;
            };
            let s = &mut self.nodes[ni];
            s.set(Flag::Doca, true);
            s.set(Flag::Dirty, true);
            if let Some(pr) = s.port(pi, &mut self.copies) {
                fold::serve_by_doca(pr);
            }
        }
        missing
    }

    /// Fold one DOCA sample of a port: `values` are (index into
    /// [`super::doca_ids::DATA_IDS`], value) of `bits`-wide values; `gap`: the
    /// device dropped samples before this one; `now`: when it came.
    /// Returns the node's index (to publish it), or None when the port is
    /// not DOCA-served.
    pub fn apply_doca(
        &mut self,
        guid: Guid,
        num: u8,
        values: &[(usize, u64)],
        bits: u32,
        gap: bool,
        now: Instant,
    ) -> Option<usize> {
        let (ni, pi) = self.port_index(guid, num)?;
        let s = &mut self.nodes[ni];
        if !fold::doca_served(s.rec.ports().nth(pi)?) {
            return None;
        }
        let pr = s.port(pi, &mut self.copies)?;
        fold::doca(pr, values, bits, gap, now);
        s.set(Flag::Seen, true);
        s.set(Flag::DocaFresh, true);
        Some(ni)
    }

    /// The PortCountersExtended counters held for a port: those that feed
    /// its totals.
    pub fn extended(&self, guid: Guid, num: u8) -> Option<PortCountersExtended> {
        let ni = self.node_index(guid)?;
        self.nodes[ni].rec.port(num)?.hc.pcx()
    }

    /// This agent is clearing counters of port `pi` of node `ni`: the
    /// next reading of them going down is no discontinuity notification.
    pub fn mark_agent_clear(&mut self, ni: usize, pi: usize) {
        if let Some(pr) = self
            .nodes
            .get_mut(ni)
            .and_then(|n| n.port(pi, &mut self.copies))
        {
            fold::agent_clear(pr);
        }
    }

    /// The PortCounters reading held for a port (node index, port index).
    pub fn counters(&self, ni: usize, pi: usize) -> Option<&PortCounters> {
        self.nodes.get(ni)?.rec.ports().nth(pi)?.counters()
    }

    /// Record that a write at `sent` produced this sample state: earlier
    /// readings in flight are dropped.
    pub fn mark_samples_written(&mut self, ni: usize, sent: Instant) {
        self.nodes[ni].samples_at = Some(sent.into());
    }

    /// The 64-bit totals of every port read by PM MADs, with the raw
    /// readings that fed them, for the state file (DOCA-served ports start
    /// again after a restart: their readings are not kept).
    pub fn export_totals(&self) -> Vec<SavedPort> {
        let mut out = Vec::new();
        for s in &self.nodes {
            for pr in s.rec.ports() {
                if pr.counters().is_none() || fold::doca_served(pr) {
                    continue;
                }
                let (valid, raw, totals) = pr.hc.export();
                out.push(SavedPort {
                    guid: s.rec.id.guid,
                    port: pr.num(),
                    from_pcx: pr.hc.fed_by_pcx(hc::OUT_OCTETS),
                    valid,
                    totals,
                    raw,
                });
            }
        }
        out
    }

    /// Take up saved totals before the first sweep: each port of the
    /// fabric not read yet continues from its saved totals, the saved raw
    /// readings standing for the last reading. Returns how many saved
    /// ports matched a port of this fabric.
    pub fn restore_totals(&mut self, saved: &[SavedPort]) -> usize {
        let mut matched = 0;
        for sp in saved {
            let Some((ni, pi)) = self.port_index(sp.guid, sp.port) else {
                continue;
            };
            let Some(pr) = self.nodes[ni].port(pi, &mut self.copies) else {
                continue;
            };
            if pr.counters().is_some() || fold::doca_served(pr) {
                continue;
            }
            fold::restore(pr, sp);
            matched += 1;
        }
        matched
    }
}
