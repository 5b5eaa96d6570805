//! Folding one reading of a port into its record: the 64-bit totals, the
//! rates, the discontinuity stamp and the resets. Pure: no clock, no lock,
//! no log; the time the reading's request was sent and the time it is
//! folded in are arguments.

use std::time::Instant;

use super::doca_ids::{DATA_IDS, DOCA_SLOTS};
use super::hc;
use super::persist::SavedPort;
use super::record::{DocaPort, FecRates, PortRecord, Stamp};
use crate::pm::class_port_info::WideCounters;
use crate::pm::{PortCounters, PortCountersExtended};

/// When a reading is folded in, and the shortest span a rate is made over
/// ([`hc::rate_min_secs`] of the sweep interval).
#[derive(Clone, Copy, Debug)]
pub struct At {
    pub now: Instant,
    pub min_secs: f64,
}

/// Before a PortExtendedSpeedsCounters reading (`data`, its request sent
/// at `sent`) replaces the port's last one: the rates of its corrected
/// symbols and uncorrectable blocks between the two (`rs_fec`: the
/// port's layout, [`crate::pm::optional::fec_total`]). Readings closer
/// than `at.min_secs`, an older reading, or a total that went down (a
/// clear) make no rate.
pub fn fec_rates(pr: &mut PortRecord, data: &[u8; 192], rs_fec: bool, sent: Instant, at: At) {
    use crate::pm::optional::{FecTotal, fec_total};
    let sent_at = Stamp::from(sent);
    let old = pr
        .optional()
        .get(crate::pm::mad::attr::PORT_EXTENDED_SPEEDS_COUNTERS);
    let prev = pr.fec_rates().copied();
    if prev.is_some_and(|p| sent_at <= p.at) {
        return; // an older reading
    }
    let mut next = FecRates {
        at: sent_at,
        corrected_symbols: None,
        uncorrectable_blocks: None,
    };
    if let (Some(prev), Some(old)) = (prev, old) {
        let secs = sent
            .saturating_duration_since(prev.at.instant())
            .as_secs_f64();
        if secs < at.min_secs {
            // Too close for a rate: the earlier ones stay.
            next.corrected_symbols = prev.corrected_symbols;
            next.uncorrectable_blocks = prev.uncorrectable_blocks;
        } else {
            let rate = |t: FecTotal| -> Option<u32> {
                let d = fec_total(data, rs_fec, t)?.checked_sub(fec_total(&old, rs_fec, t)?)?;
                Some(((d as f64 / secs) as f32).to_bits())
            };
            next.corrected_symbols = rate(FecTotal::CorrectedSymbols);
            next.uncorrectable_blocks = rate(FecTotal::UncorrectableBlocks);
        }
    }
    pr.set_fec_rates(next);
}

/// A PortCounters reading whose request was sent at `sent` is not older
/// than the one the port holds (a reading in flight while a write changed
/// the port is dropped).
pub fn counters_newer(pr: &PortRecord, sent: Instant) -> bool {
    pr.sweep
        .counters_at
        .is_none_or(|held| Stamp::from(sent) >= held)
}

/// The slots a DOCA-served port takes from DOCA, not from PM MADs.
fn doca_skip(pr: &PortRecord) -> u32 {
    if pr.doca().is_some() { DOCA_SLOTS } else { 0 }
}

/// The additional counters' slots a reading of PortCountersExtended
/// (`pcx`) or of PortCounters does not feed on a node with `wide`
/// counters: PortCountersExtended feeds them where the node fills them,
/// PortCounters everywhere else.
fn additional_skip(wide: WideCounters, pcx: bool) -> u32 {
    if (wide == WideCounters::All) == pcx {
        0
    } else {
        hc::PCX_ADDITIONAL_SLOTS
    }
}

/// Fold a PortCounters reading (its request sent at `sent`) of a port on
/// a node with `wide` counters (from its ClassPortInfo). Check
/// [`counters_newer`] first.
pub fn counters(
    pr: &mut PortRecord,
    cur: &PortCounters,
    wide: WideCounters,
    sent: Instant,
    at: At,
) {
    let use_pcx = wide != WideCounters::None;
    let now = at.now;
    if pr.sweep.hc_from_pcx.is_some_and(|was| was != use_pcx) {
        // The data and packet counters change source: their totals lose
        // what happened in between.
        pr.discontinuity = Some(now.into());
    }
    pr.sweep.hc_from_pcx = Some(use_pcx);
    let skip = doca_skip(pr) | additional_skip(wide, false);
    let first = pr.counters().is_none();
    let cleared = pr.counters().is_some_and(|p| hc::pc_went_down(p, cur));
    let before = pr.hc.all_shown();
    let went_down = hc::fold_pc(&mut pr.hc, cur, use_pcx, skip);
    if let Some(last) = pr.read_at {
        let secs = now.saturating_duration_since(last.instant()).as_secs_f64();
        pr.rates.update(
            &before,
            &pr.hc,
            hc::pc_slots(use_pcx, skip),
            (secs, at.min_secs),
        );
    }
    if cleared && !pr.sweep.agent_clear {
        pr.external_resets = pr.external_resets.wrapping_add(1);
    }
    pr.sweep.agent_clear = false;
    if went_down || first {
        pr.discontinuity = Some(now.into());
    }
    pr.sweep.counters_at = Some(sent.into());
    pr.read_at = Some(now.into());
}

/// Fold a PortCountersExtended reading of a port on a node with `wide`
/// counters.
pub fn extended(pr: &mut PortRecord, cur: &PortCountersExtended, wide: WideCounters, at: At) {
    let skip = doca_skip(pr) | additional_skip(wide, true);
    let now = at.now;
    let before = pr.hc.all_shown();
    if hc::fold_pcx(&mut pr.hc, cur, skip) {
        pr.discontinuity = Some(now.into());
        if !pr.sweep.agent_clear_ext {
            pr.external_resets = pr.external_resets.wrapping_add(1);
        }
    }
    if let Some(last) = pr.sweep.pcx_read_at {
        let secs = now.saturating_duration_since(last.instant()).as_secs_f64();
        pr.rates
            .update(&before, &pr.hc, hc::PCX_SLOTS & !skip, (secs, at.min_secs));
    }
    pr.sweep.pcx_read_at = Some(now.into());
    pr.sweep.agent_clear_ext = false;
}

/// This agent is clearing the port's counters: the next reading of them
/// going down is no reset by someone else.
pub fn agent_clear(pr: &mut PortRecord) {
    pr.sweep.agent_clear = true;
    pr.sweep.agent_clear_ext = true;
}

/// Serve the port's [`DOCA_SLOTS`] from DOCA telemetry diag from now on.
pub fn serve_by_doca(pr: &mut PortRecord) {
    pr.extras_mut().doca.get_or_insert_with(|| {
        Box::new(DocaPort {
            prev: [None; DATA_IDS.len()],
            rate_mark: None,
        })
    });
}

/// The port is served by DOCA telemetry diag.
pub fn doca_served(pr: &PortRecord) -> bool {
    pr.doca().is_some()
}

/// Fold one DOCA sample of a port: `values` are (index into [`DATA_IDS`],
/// value) of `bits`-wide values; `gap`: the device dropped samples before
/// this one. Returns false (and changes nothing) when the port is not
/// DOCA-served.
pub fn doca(
    pr: &mut PortRecord,
    values: &[(usize, u64)],
    bits: u32,
    gap: bool,
    now: Instant,
) -> bool {
    let Some(d) = pr.extras.as_mut().and_then(|x| x.doca.as_mut()) else {
        return false;
    };
    let mut disc = false;
    for &(i, v) in values {
        let Some(id) = DATA_IDS.get(i) else {
            continue;
        };
        let first = d.prev[i].is_none();
        disc |= hc::fold_octets(&mut pr.hc, id.slot, d.prev[i], v, bits) || first;
        d.prev[i] = Some(v);
    }
    // A 32-bit value may have wrapped more than once in a gap.
    if disc || (gap && bits < 64) {
        pr.discontinuity = Some(now.into());
    }
    match d.rate_mark {
        Some((mark, _))
            if now.saturating_duration_since(mark).as_secs_f64() < hc::RATE_MIN_SECS => {}
        Some((mark, before)) => {
            let secs = now.saturating_duration_since(mark).as_secs_f64();
            pr.rates
                .update(&before, &pr.hc, DOCA_SLOTS, (secs, hc::RATE_MIN_SECS));
            d.rate_mark = Some((now, pr.hc.all_shown()));
        }
        None => d.rate_mark = Some((now, pr.hc.all_shown())),
    }
    pr.read_at = Some(now.into());
    true
}

/// Take up a port's saved totals: the saved raw readings stand for the
/// last reading.
pub fn restore(pr: &mut PortRecord, saved: &SavedPort) {
    pr.hc
        .restore(saved.from_pcx, saved.valid, &saved.raw, &saved.totals);
    pr.sweep.hc_from_pcx = Some(saved.from_pcx);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::fabric::hc::{IN_OCTETS, OUT_OCTETS, OUT_PKTS, slot};
    use crate::ib::Port;
    use std::time::Duration;

    const S: Duration = Duration::from_secs(1);

    fn port() -> PortRecord {
        PortRecord::new(Port {
            num: 1,
            ..Default::default()
        })
    }

    fn pc(xmit_data: u32, symbol_errors: u16) -> PortCounters {
        PortCounters {
            port_select: 1,
            xmit_data,
            symbol_errors,
            ..Default::default()
        }
    }

    fn at(now: Instant) -> At {
        At { now, min_secs: 1.0 }
    }

    /// The rate of slot `k`, to a thousandth (times are kept to the
    /// microsecond).
    pub(crate) fn rate(p: &PortRecord, k: usize) -> Option<f64> {
        p.rates.get(k).map(|r| (r * 1000.0).round() / 1000.0)
    }

    /// The first reading starts the totals and marks a discontinuity;
    /// the next ones add what moved and make rates over the virtual time
    /// between them; a reading asked before the held one is older.
    #[test]
    fn counters_fold_into_totals_and_rates_over_the_time_passed_in() {
        let t0 = Instant::now();
        let mut p = port();
        assert!(counters_newer(&p, t0));
        counters(&mut p, &pc(100, 0), WideCounters::None, t0, at(t0));
        assert_eq!(p.discontinuity, Some(t0.into()));
        assert_eq!(p.read_at, Some(t0.into()));
        assert_eq!(p.hc.shown(OUT_OCTETS), Some(400), "words of 4 octets");
        assert_eq!(rate(&p, OUT_OCTETS), None, "one reading: no rate");

        let t1 = t0 + 10 * S;
        counters(&mut p, &pc(1100, 2), WideCounters::None, t1, at(t1));
        assert_eq!(p.hc.shown(OUT_OCTETS), Some(4400));
        assert_eq!(p.hc.shown(slot("SymbolErrors")), Some(2));
        assert_eq!(rate(&p, OUT_OCTETS), Some(400.0), "4000 octets in 10 s");
        assert_eq!(p.discontinuity, Some(t0.into()), "nothing lost");
        assert_eq!(p.external_resets, 0);

        // A reply to a request sent before the held reading's.
        assert!(!counters_newer(&p, t0 + 5 * S));
        assert!(counters_newer(&p, t1));
    }

    /// A port read by PortCounters and PortCountersExtended alone takes
    /// no extras; a FEC reading or DOCA gives it one, shared by both.
    #[test]
    fn only_a_port_with_fec_or_doca_readings_takes_extras() {
        let t0 = Instant::now();
        let mut p = port();
        counters(&mut p, &pc(100, 0), WideCounters::All, t0, at(t0));
        let x = PortCountersExtended {
            port_select: 1,
            xmit_data: 7,
            ..Default::default()
        };
        extended(&mut p, &x, WideCounters::All, at(t0));
        assert!(p.extras.is_none(), "no extras for a plain PM port");
        serve_by_doca(&mut p);
        assert!(doca_served(&p) && p.fec_rates().is_none() && p.optional().is_empty());
        fec_rates(&mut p, &[0; 192], true, t0, at(t0));
        assert!(
            doca_served(&p) && p.fec_rates().is_some(),
            "one extras for both"
        );
    }

    /// Counters going down without this agent's clear are a reset by
    /// someone else and a discontinuity; after this agent's own clear
    /// they are neither counted nor lost.
    #[test]
    fn a_clear_by_the_agent_is_no_reset_and_one_by_someone_else_is() {
        let t0 = Instant::now();
        let mut p = port();
        counters(&mut p, &pc(1000, 50), WideCounters::None, t0, at(t0));
        let t1 = t0 + 10 * S;
        agent_clear(&mut p);
        counters(&mut p, &pc(10, 0), WideCounters::None, t1, at(t1));
        assert_eq!(p.external_resets, 0);
        assert_eq!(p.hc.shown(slot("SymbolErrors")), Some(50), "kept");

        let t2 = t1 + 10 * S;
        counters(&mut p, &pc(5, 0), WideCounters::None, t2, at(t2));
        assert_eq!(p.external_resets, 1);
        assert_eq!(p.discontinuity, Some(t2.into()));
        // The next clear of its own is expected once only.
        let t3 = t2 + 10 * S;
        counters(&mut p, &pc(500, 0), WideCounters::None, t3, at(t3));
        assert_eq!(p.external_resets, 1);
    }

    /// Data and packets move from PortCounters to PortCountersExtended
    /// when the node says it has them: the change of source is a
    /// discontinuity, and the extended counters make the rates.
    #[test]
    fn a_change_of_source_is_a_discontinuity_and_extended_counters_make_rates() {
        let t0 = Instant::now();
        let mut p = port();
        counters(&mut p, &pc(100, 0), WideCounters::None, t0, at(t0));
        let t1 = t0 + 10 * S;
        counters(
            &mut p,
            &pc(200, 0),
            WideCounters::DataAndPackets,
            t1,
            at(t1),
        );
        assert_eq!(p.discontinuity, Some(t1.into()));
        let pcx = |data: u64, pkts: u64| PortCountersExtended {
            port_select: 1,
            xmit_data: data,
            xmit_pkts: pkts,
            ..Default::default()
        };
        extended(
            &mut p,
            &pcx(1 << 40, 10),
            WideCounters::DataAndPackets,
            at(t1),
        );
        // The first extended reading is where its totals go on from.
        let base = p.hc.shown(OUT_OCTETS).unwrap();
        let t2 = t1 + 20 * S;
        extended(
            &mut p,
            &pcx((1 << 40) + 500, 30),
            WideCounters::DataAndPackets,
            at(t2),
        );
        assert_eq!(p.hc.shown(OUT_OCTETS), Some(base + 2000));
        assert_eq!(rate(&p, OUT_OCTETS), Some(100.0), "2000 octets in 20 s");
        assert_eq!(rate(&p, OUT_PKTS), Some(1.0));
        // Going down: someone else cleared them.
        let t3 = t2 + 20 * S;
        extended(&mut p, &pcx(7, 1), WideCounters::DataAndPackets, at(t3));
        assert_eq!((p.external_resets, p.discontinuity), (1, Some(t3.into())));
    }

    /// DOCA samples feed their slots, make rates no closer than a second
    /// apart, and a port not served by DOCA takes none.
    #[test]
    fn doca_samples_feed_their_slots_with_rates_a_second_apart_at_least() {
        let t0 = Instant::now();
        let mut p = port();
        assert!(!doca(&mut p, &[(0, 5)], 64, false, t0), "not DOCA-served");
        assert_eq!(p.hc.shown(OUT_OCTETS), None);
        serve_by_doca(&mut p);
        assert!(doca_served(&p));
        let tx = DATA_IDS.iter().position(|d| d.slot == OUT_OCTETS).unwrap();
        let rx = DATA_IDS.iter().position(|d| d.slot == IN_OCTETS).unwrap();
        assert!(doca(&mut p, &[(tx, 1000), (rx, 10)], 64, false, t0));
        assert_eq!(p.discontinuity, Some(t0.into()), "the first value");
        assert_eq!(p.hc.shown(OUT_OCTETS), Some(1000), "bytes as they are");
        // 100 ms later: counted, no rate yet.
        let t1 = t0 + S / 10;
        assert!(doca(&mut p, &[(tx, 1100), (rx, 20)], 64, false, t1));
        assert_eq!(p.hc.shown(OUT_OCTETS), Some(1100));
        assert_eq!(rate(&p, OUT_OCTETS), None);
        let t2 = t0 + 2 * S;
        assert!(doca(&mut p, &[(tx, 3000), (rx, 30)], 64, false, t2));
        assert_eq!(rate(&p, OUT_OCTETS), Some(1000.0));
        assert_eq!(p.read_at, Some(t2.into()));
        assert_eq!(p.discontinuity, Some(t0.into()));
        // A gap in 32-bit samples may hide wraps.
        let t3 = t2 + S;
        assert!(doca(&mut p, &[(tx, 3100)], 32, true, t3));
        assert_eq!(p.discontinuity, Some(t3.into()));
        // PortCounters no longer feed the DOCA slots.
        counters(&mut p, &pc(1, 0), WideCounters::None, t3, at(t3));
        assert_eq!(p.hc.shown(OUT_OCTETS), Some(3100));
    }

    /// Corrected symbols and uncorrectable blocks make rates between two
    /// PortExtendedSpeedsCounters readings far enough apart; a clear, an
    /// older reading or the layout without RS-FEC's symbol count make
    /// none.
    #[test]
    fn fec_totals_make_rates_between_two_readings() {
        use crate::pm::optional::PortExtendedSpeedsCounters as X;
        let attr = crate::pm::mad::attr::PORT_EXTENDED_SPEEDS_COUNTERS;
        let k = crate::pm::optional::OPTIONAL_ATTRS
            .iter()
            .position(|&a| a == attr)
            .unwrap();
        let data = |sym: u32, unc: u32| {
            let mut d = [0u8; 192];
            X {
                port_select: 1,
                fec_corrected_symbols: sym,
                fec_uncorrectable_blocks: unc,
                ..Default::default()
            }
            .encode(&mut d);
            d
        };
        let t0 = Instant::now();
        let at = At {
            now: t0,
            min_secs: 1.0,
        };
        let mut pr = port();
        let read = |pr: &mut PortRecord, secs: u64, d: [u8; 192], rs: bool| {
            fec_rates(pr, &d, rs, t0 + S * secs as u32, at);
            pr.optional_mut().set(k, &d);
        };
        read(&mut pr, 0, data(100, 1), true);
        let r = pr.fec_rates().unwrap();
        assert_eq!(
            (r.corrected_symbols(), r.uncorrectable_blocks()),
            (None, None)
        );
        read(&mut pr, 10, data(1100, 21), true);
        // (Stamps are microseconds: the rates are within a millionth.)
        let near = |v: Option<f64>, want: f64| v.is_some_and(|v| (v - want).abs() < want * 1e-5);
        let r = pr.fec_rates().unwrap();
        assert!(near(r.corrected_symbols(), 100.0), "{r:?}");
        assert!(near(r.uncorrectable_blocks(), 2.0), "{r:?}");
        // Half a second later: too close, the rates stay.
        fec_rates(&mut pr, &data(5000, 21), true, t0 + S * 10 + S / 2, at);
        assert!(near(pr.fec_rates().unwrap().corrected_symbols(), 100.0));
        // An older reading changes nothing.
        let before = pr.fec_rates().copied();
        fec_rates(&mut pr, &data(0, 0), true, t0 + S * 5, at);
        assert_eq!(pr.fec_rates().copied(), before);
        // A clear: no rate until the next reading.
        pr.optional_mut().set(k, &data(1100, 21));
        read(&mut pr, 20, data(5, 0), true);
        let r = pr.fec_rates().unwrap();
        assert_eq!(
            (r.corrected_symbols(), r.uncorrectable_blocks()),
            (None, None)
        );
        // Without RS-FEC: no symbol count (blocks are the lanes' sums).
        read(&mut pr, 30, data(500, 0), false);
        assert_eq!(pr.fec_rates().unwrap().corrected_symbols(), None);
    }
}
