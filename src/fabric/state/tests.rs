//! The state's tests: readings folded in, strikes and reachability,
//! redirects, the state file's totals, DOCA-served ports.

use super::*;
use crate::fabric::cache::Cache;
use crate::fabric::doca_ids::DATA_IDS;
use crate::fabric::engine::MadOutcome;
use crate::fabric::fold::tests::rate;
use crate::fabric::hc::{IN_OCTETS, OUT_OCTETS, slot};
use crate::fabric::record::DataSource;
use crate::fabric::strikes::STRIKES;
use crate::pm::class_port_info::CAP_EXT_WIDTH;
use crate::pm::mad::attr;
use crate::pm::mad::status::REDIRECT as STATUS_REDIRECT;
use crate::pm::{PortCounters, PortSamplesControl};
use std::time::Duration;

/// Two switches of two ports, cabled by port 1 (one kind of node).
pub(crate) const TWO: &str =
    "Switch\t2 \"sw0\"\n[1]\t\"sw1\"[1]\n\nSwitch\t2 \"sw1\"\n[1]\t\"sw0\"[1]\n\n";

pub(crate) fn two_switches() -> Fabric {
    crate::ib::topology::parse(TWO).unwrap()
}

const S: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

fn state(cfg: SweepConfig) -> SharedState {
    SharedState::new(two_switches(), cfg, Instant::now())
}

fn reply(encode: impl FnOnce(&mut [u8; 192])) -> MadOutcome {
    reply_status(0, encode)
}

fn reply_status(status: u16, encode: impl FnOnce(&mut [u8; 192])) -> MadOutcome {
    let mut data = Box::new([0u8; 192]);
    encode(&mut data);
    MadOutcome::Reply { status, data }
}

fn pc(xmit_data: u32) -> MadOutcome {
    reply(|d| {
        PortCounters {
            port_select: 1,
            xmit_data,
            symbol_errors: 3,
            ..Default::default()
        }
        .encode(d)
    })
}

fn cpi(capability_mask: u16) -> MadOutcome {
    reply(|d| {
        ClassPortInfo {
            capability_mask,
            ..Default::default()
        }
        .encode(d)
    })
}

/// Node `ni`'s port at index `pi`.
fn port(st: &FabricState, ni: usize, pi: usize) -> &PortRecord {
    st.nodes[ni].rec.ports().nth(pi).unwrap()
}

/// PortCounters of port index 0 of node 0, its request sent 10 ms
/// before `now`.
fn read(st: &mut FabricState, xmit_data: u32, now: Instant) -> [bool; 2] {
    let mut answered = [false; 2];
    st.apply(
        Slot::Counters(0, 0),
        pc(xmit_data),
        (now - 10 * MS, now),
        &mut answered,
    );
    answered
}

/// A second PortCounters reading adds to the 64-bit totals, makes a
/// rate over the virtual time between the readings, and shows in the
/// published record; a reply to a request sent before the held
/// reading's changes nothing.
#[test]
fn readings_fold_into_the_totals_and_the_published_record() {
    let t0 = Instant::now();
    let discovered = t0 - 5 * S;
    let state = SharedState::new(two_switches(), SweepConfig::default(), discovered);
    let cache = Cache::new();
    let mut st = state.lock();
    assert_eq!(read(&mut st, 100, t0), [true, false]);
    assert_eq!(port(&st, 0, 0).hc.shown(OUT_OCTETS), Some(400));
    let t1 = t0 + 10 * S;
    read(&mut st, 1100, t1);
    assert_eq!(st.counters(0, 0).map(|c| c.xmit_data), Some(1100));
    let p = port(&st, 0, 0);
    assert_eq!(p.hc.shown(OUT_OCTETS), Some(4400));
    assert_eq!(p.hc.shown(slot("SymbolErrors")), Some(3));
    assert_eq!(rate(p, OUT_OCTETS), Some(400.0), "4000 octets in 10 s");
    assert_eq!(p.read_at, Some(t1.into()));
    assert_eq!(p.discontinuity, Some(t0.into()));
    // In flight since before the held reading: dropped.
    let mut answered = [false; 2];
    st.apply(
        Slot::Counters(0, 0),
        pc(9000),
        (t0 + 5 * S, t1 + S),
        &mut answered,
    );
    assert!(answered[0], "still an answer of the node");
    assert_eq!(port(&st, 0, 0).hc.shown(OUT_OCTETS), Some(4400));

    st.sweep_no = 1;
    st.end_sweep(&[true, false], Instant::now());
    st.publish(&cache, Instant::now());
    let snap = cache.load();
    assert_eq!(snap.nodes.len(), 1, "node 1 never answered");
    assert_eq!(snap.stats.discovered, Some(discovered));
    let rec = &snap.nodes[0];
    assert_eq!(rec.id.guid, st.fabric().nodes[0].id.guid);
    assert_eq!(rec.ports().next().unwrap().hc.shown(OUT_OCTETS), Some(4400));
    assert!(rec.reachable);
}

/// A node silent in `unreachable_after` sweeps in a row is
/// unreachable, forgets its PMA's redirect and ClassPortInfo, and is
/// reachable again at its next answer; a DOCA sample counts as an
/// answer; a transport failure makes every node unreachable at once.
#[test]
fn a_silent_node_is_unreachable_after_the_configured_sweeps_until_it_answers() {
    let cfg = SweepConfig {
        unreachable_after: 3,
        ..Default::default()
    };
    let state = state(cfg);
    let cache = Cache::new();
    let mut st = state.lock();
    let t0 = Instant::now();
    let mut answered = [false; 2];
    st.apply(Slot::Cpi(1), cpi(0), (t0, t0 + MS), &mut answered);
    assert!(st.nodes[1].cpi().is_some());
    st.end_sweep(&answered, Instant::now());
    for sweep in 1..=3u32 {
        let mut answered = [false; 2];
        let at = t0 + 10 * S * sweep;
        st.apply(
            Slot::Counters(1, 0),
            MadOutcome::Timeout,
            (at, at + S),
            &mut answered,
        );
        st.apply(Slot::Cpi(0), cpi(0), (at, at + MS), &mut answered);
        assert_eq!(answered, [true, false]);
        st.end_sweep(&answered, Instant::now());
        assert_eq!(st.nodes[1].failed_sweeps, sweep);
        st.publish(&cache, Instant::now());
        let snap = cache.load();
        let rec = snap
            .nodes
            .iter()
            .find(|n| n.id.guid == st.fabric().nodes[1].id.guid);
        assert_eq!(rec.map(|r| r.reachable), Some(sweep < 3), "sweep {sweep}");
        assert_eq!(st.nodes[1].cpi().is_some(), sweep < 3, "sweep {sweep}");
    }
    assert_eq!(cache.load().reachable, 1);
    // It answers again.
    st.end_sweep(&[true, true], Instant::now());
    assert_eq!(st.nodes[1].failed_sweeps, 0);
    st.publish(&cache, Instant::now());
    assert_eq!(cache.load().reachable, 2);

    // A DOCA sample since the last sweep ended is an answer.
    let guid = st.fabric().nodes[1].id.guid;
    st.set_doca_ports(&[(guid, 1)]);
    let now = t0 + 60 * S;
    assert_eq!(st.apply_doca(guid, 1, &[(0, 5)], 64, false, now), Some(1));
    st.end_sweep(&[true, false], Instant::now());
    assert_eq!(st.nodes[1].failed_sweeps, 0, "DOCA answered");
    st.end_sweep(&[true, false], Instant::now());
    assert_eq!(st.nodes[1].failed_sweeps, 1, "once per sample");

    st.mark_all_unreachable();
    st.publish(&cache, Instant::now());
    assert_eq!(cache.load().reachable, 0);
    assert!(
        st.nodes
            .iter()
            .all(|n| n.cpi().is_none() && n.failed_sweeps == 3)
    );
}

/// Port index 0 of node 0 read at `t0` and `t0 + 10 s`: 4400 octets
/// out.
fn read_twice(st: &mut FabricState, t0: Instant) {
    read(st, 100, t0);
    read(st, 1100, t0 + 10 * S);
}

/// Error statuses say what a node does not have: the sample
/// mechanism, PortSamplesResultExtended, an optional attribute (for
/// the kind once [`KIND_VERDICT`] nodes said so); a ClassPortInfo with
/// the redirect status moves the node's PMA; the rare retry asks again.
#[test]
fn error_statuses_mark_what_a_node_lacks_and_a_redirect_moves_its_pma() {
    let mut fabric = two_switches();
    fabric.nodes[0].id.lid = 5;
    let state = SharedState::new(fabric, SweepConfig::default(), Instant::now());
    let mut st = state.lock();
    let t0 = Instant::now();
    let times = (t0, t0 + MS);
    let mut answered = [false; 2];
    assert_eq!(st.pma(0, None), Some(MadAddr::gsi(5)));

    // PortSamplesResultExtended is asked where the PMA says it has it.
    st.apply(Slot::Cpi(0), cpi(CAP_EXT_WIDTH), times, &mut answered);
    let results = |st: &FabricState| st.sample_results(0).map(|(a, _)| a).collect::<Vec<_>>();
    assert_eq!(
        results(&st),
        [
            attr::PORT_SAMPLES_RESULT,
            attr::PORT_SAMPLES_RESULT_EXTENDED
        ]
    );
    let bad = || MadOutcome::Status(crate::pm::mad::status::METHOD_ATTR_UNSUPPORTED);
    st.apply(Slot::SamplesResultExt(0), bad(), times, &mut answered);
    assert_eq!(results(&st), [attr::PORT_SAMPLES_RESULT]);
    assert!(st.is_probe(Slot::SamplesControl(0)), "not answered yet");
    st.apply(Slot::SamplesControl(0), bad(), times, &mut answered);
    assert!(st.nodes[0].answers.no_samples);
    assert_eq!(answered, [true, false], "an error status is an answer");

    // An optional attribute: the node's, then its kind's.
    let k = 1;
    st.apply(Slot::Optional(0, 0, k), bad(), times, &mut answered);
    assert_eq!(st.nodes[0].answers.optional_unsupported, 1 << k);
    assert_eq!(st.kind(1).unsupported, 0, "one node is no verdict");
    st.apply(Slot::Optional(1, 0, k), bad(), times, &mut answered);
    assert_eq!(st.kind(1).unsupported, 1 << k);
    assert_eq!(st.optional_skipped(1), 1 << k);

    // The rare retry asks the nodes again; the kind's verdict stands
    // but on each node's own sweep.
    st.retry_unanswered();
    assert!(!st.nodes[0].answers.no_samples);
    assert_eq!(st.nodes[0].answers.optional_unsupported, 0);
    for ni in 0..2 {
        let own = st.self_check(ni);
        assert_eq!(own, ni == 0, "sweep 0 is node 0's own");
        let skipped = if own { 0 } else { 1 << k };
        assert_eq!(st.optional_skipped(ni), skipped, "node {ni}");
    }
    assert_eq!(results(&st).len(), 2);

    // The redirect: the PMA elsewhere, no ClassPortInfo taken from it
    // (the one read is stale once the node was unreachable).
    st.mark_all_unreachable();
    let redirect = reply_status(STATUS_REDIRECT, |d| {
        ClassPortInfo {
            redirect_lid: 9,
            redirect_qp: 0x42,
            redirect_qkey: 0x8001_0000,
            redirect_sl: 2,
            ..Default::default()
        }
        .encode(d)
    });
    st.apply(Slot::Cpi(0), redirect, times, &mut answered);
    let to = MadAddr {
        lid: 9,
        qpn: 0x42,
        qkey: 0x8001_0000,
        pkey_index: 0,
        sl: 2,
    };
    assert_eq!(st.pma(0, None), Some(to));
    assert!(st.nodes[0].cpi().is_none());
    // Unreachable: the redirect is forgotten.
    st.mark_all_unreachable();
    assert_eq!(st.pma(0, None), Some(MadAddr::gsi(5)));
}

/// Node `ni` leaves PortSamplesControl and optional attribute `k`
/// of its first port unanswered, asked at `at`.
fn silent(st: &mut FabricState, ni: usize, k: usize, at: Instant, answered: &mut [bool]) {
    for slot in [Slot::SamplesControl(ni), Slot::Optional(ni, 0, k)] {
        st.apply(slot, MadOutcome::Timeout, (at, at + S), answered);
    }
}

/// Silence to an attribute from a node that answers others is a
/// strike; [`STRIKES`] sweeps of it and the attribute is not asked
/// any more; a node that answers nothing gets no strike; an answer
/// takes the strikes back.
#[test]
fn silence_of_an_answering_node_strikes_an_attribute_out() {
    let state = state(SweepConfig::default());
    let mut st = state.lock();
    let t0 = Instant::now();
    let k = 2;
    for sweep in 1..=u32::from(STRIKES) {
        let at = t0 + 10 * S * sweep;
        let mut answered = [false; 2];
        silent(&mut st, 0, k, at, &mut answered);
        silent(&mut st, 1, k, at, &mut answered);
        // Node 0 answers something, node 1 nothing.
        st.apply(Slot::Cpi(0), cpi(0), (at, at + MS), &mut answered);
        st.end_sweep(&answered, Instant::now());
        let out = sweep == u32::from(STRIKES);
        assert_eq!(st.nodes[0].answers.no_samples, out, "sweep {sweep}");
        assert!(st.nodes[0].answers.samples_silent());
        assert_eq!(
            st.nodes[0].answers.optional_unsupported,
            u32::from(out) << k
        );
        assert!(!st.nodes[1].answers.no_samples && st.nodes[1].answers.optional_unsupported == 0);
    }
    assert_eq!(st.kind(0).unsupported, 0, "one node is no verdict");

    // A strike, then answers: the strikes start again.
    st.retry_unanswered();
    let at = t0 + 100 * S;
    let mut answered = [false; 2];
    silent(&mut st, 0, k, at, &mut answered);
    st.apply(Slot::Cpi(0), cpi(0), (at, at + MS), &mut answered);
    st.end_sweep(&answered, Instant::now());
    let control = reply(|d| PortSamplesControl::default().encode(d));
    st.apply(
        Slot::SamplesControl(0),
        control,
        (at, at + MS),
        &mut answered,
    );
    let optional = reply(|d| d[0] = 1);
    st.apply(
        Slot::Optional(0, 0, k),
        optional,
        (at, at + MS),
        &mut answered,
    );
    assert!(!st.is_probe(Slot::SamplesControl(0)), "answered");
    assert!(st.is_probe(Slot::Optional(0, 0, k)));
    assert!(!st.is_probe(Slot::Counters(0, 0)));
    for _ in 0..STRIKES - 1 {
        silent(&mut st, 0, k, at, &mut answered);
        st.end_sweep(&answered, Instant::now());
    }
    assert!(!st.nodes[0].answers.no_samples);
    assert_eq!(st.nodes[0].answers.optional_unsupported, 0);
    assert_eq!(st.nodes[0].answers.optional_answered, 1 << k);
    assert_eq!(st.kind(0).answered, 1 << k);
}

/// The totals exported for the state file continue in a fresh state
/// of the same fabric: the next reading adds what moved since the
/// saved one; ports already read and ports of other fabrics are left.
#[test]
fn exported_totals_continue_in_a_fresh_state() {
    let t0 = Instant::now();
    let saved = {
        let state = state(SweepConfig::default());
        let mut st = state.lock();
        read_twice(&mut st, t0);
        st.export_totals()
    };
    assert_eq!(saved.len(), 1, "one port read");
    let words = (saved[0].port, saved[0].totals[OUT_OCTETS]);
    assert_eq!(words, (1, 1100), "PortXmitData counts words of 4 octets");

    let state = state(SweepConfig::default());
    let mut st = state.lock();
    let mut stranger = saved[0].clone();
    stranger.guid = crate::ib::Guid(0x99);
    assert_eq!(st.restore_totals(&[saved[0].clone(), stranger]), 1);
    assert_eq!(port(&st, 0, 0).hc.shown(OUT_OCTETS), Some(4400));
    let t1 = t0 + 3600 * S;
    read(&mut st, 1200, t1);
    assert_eq!(port(&st, 0, 0).hc.shown(OUT_OCTETS), Some(4800));
    assert_eq!(st.export_totals()[0].totals[OUT_OCTETS], 1200);
    // Read now: a restore does not go back.
    assert_eq!(st.restore_totals(&saved), 0);
    assert_eq!(port(&st, 0, 0).hc.shown(OUT_OCTETS), Some(4800));
}

/// Counters going down after this agent marked its clear are no
/// reset by someone else; without the mark they are.
#[test]
fn a_marked_clear_of_the_agent_is_no_external_reset() {
    for marked in [true, false] {
        let state = state(SweepConfig::default());
        let mut st = state.lock();
        let t0 = Instant::now();
        read_twice(&mut st, t0);
        if marked {
            st.mark_agent_clear(0, 0);
        }
        st.mark_agent_clear(7, 0);
        let t2 = t0 + 20 * S;
        read(&mut st, 10, t2);
        let p = port(&st, 0, 0);
        assert_eq!(p.external_resets, u32::from(!marked), "marked {marked}");
        assert_eq!(p.hc.shown(OUT_OCTETS), Some(4440), "marked {marked}");
    }
}

/// Sample readings sent before a write of the sample state are
/// dropped; those sent after are kept.
#[test]
fn sample_readings_from_before_a_write_are_dropped() {
    let state = state(SweepConfig::default());
    let mut st = state.lock();
    let t0 = Instant::now();
    let control = |tick: u8| {
        reply(move |d| {
            PortSamplesControl {
                tick,
                ..Default::default()
            }
            .encode(d)
        })
    };
    let mut answered = [false; 2];
    st.mark_samples_written(0, t0 + S);
    st.apply(
        Slot::SamplesControl(0),
        control(1),
        (t0, t0 + 2 * S),
        &mut answered,
    );
    assert!(st.nodes[0].rec.samples_control.is_none());
    st.apply(
        Slot::SamplesControl(0),
        control(2),
        (t0 + S, t0 + 2 * S),
        &mut answered,
    );
    assert_eq!(
        st.nodes[0].rec.samples_control.as_ref().map(|c| c.tick),
        Some(2)
    );
}

/// DOCA-served ports take their data counters from DOCA samples, not
/// from PortCounters, and are not in the state file; ports not in the
/// fabric are returned.
#[test]
fn doca_ports_take_their_data_counters_from_doca() {
    let state = state(SweepConfig::default());
    let cache = Cache::new();
    let mut st = state.lock();
    let t0 = Instant::now();
    let guid = st.fabric().nodes[0].id.guid;
    let stranger = (crate::ib::Guid(0x99), 1);
    assert_eq!(
        st.set_doca_ports(&[(guid, 1), (guid, 9), stranger]),
        [(guid, 9), stranger]
    );
    assert_eq!(
        st.apply_doca(guid, 2, &[(0, 5)], 64, false, t0),
        None,
        "port 2 is not served"
    );
    let tx = DATA_IDS.iter().position(|d| d.slot == OUT_OCTETS).unwrap();
    let rx = DATA_IDS.iter().position(|d| d.slot == IN_OCTETS).unwrap();
    assert_eq!(
        st.apply_doca(guid, 1, &[(tx, 1000), (rx, 50)], 64, false, t0),
        Some(0)
    );
    assert_eq!(
        st.apply_doca(guid, 1, &[(tx, 3000)], 64, false, t0 + S),
        Some(0)
    );
    read(&mut st, 100_000, t0 + 2 * S);
    let p = port(&st, 0, 0);
    assert_eq!(p.hc.shown(OUT_OCTETS), Some(3000), "DOCA's bytes");
    assert_eq!(p.hc.shown(IN_OCTETS), Some(50));
    assert_eq!(
        p.hc.shown(slot("SymbolErrors")),
        Some(3),
        "from PortCounters"
    );
    assert!(st.export_totals().is_empty());
    st.end_sweep(&[false, false], Instant::now());
    st.publish(&cache, Instant::now());
    assert_eq!(cache.load().nodes[0].source, DataSource::PmaAndDoca);
}
