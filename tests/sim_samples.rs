//! PortSamplesControl / PortSamplesResult of the simulated fabric, driven
//! only through encoded MADs and checked against the IBA rules and against
//! the same ports' PortCounters / PortCountersExtended.

#[path = "common/sim_rig.rs"]
mod sim_rig;
use sim_rig::Rig;

use std::time::{Duration, Instant};

use ibpm_agentx::ib::NodeType;
use ibpm_agentx::pm::mad::{attr, method, status};
use ibpm_agentx::pm::{PortCountersExtended, PortSamplesControl, samples};

/// IBA: one tick = (Tick + 1) x 10 link transfer periods; the simulator
/// documents a 400 ps period.
fn tick_ns(tick: u8) -> u64 {
    (u64::from(tick) + 1) * 10 * 400 / 1000
}

fn width_max(code: u8) -> u64 {
    let bits = samples::counter_width_bits(code).expect("valid CounterWidth");
    (1u64 << bits) - 1
}

fn sample(port: u8, start: u32, interval: u32, selects: &[u16]) -> PortSamplesControl {
    let mut c = PortSamplesControl {
        op_code: 0xFF,
        port_select: port,
        tag: 0x7A6,
        sample_start: start,
        sample_interval: interval,
        ..Default::default()
    };
    c.counter_select[..selects.len()].copy_from_slice(selects);
    c
}

const MANDATORY: [u16; 5] = [
    samples::Q_XMIT_DATA,
    samples::Q_RCV_DATA,
    samples::Q_XMIT_PKTS,
    samples::Q_RCV_PKTS,
    samples::Q_XMIT_WAIT,
];

#[test]
fn timers_count_ticks_of_the_advertised_length() {
    let mut rig = Rig::new(21, true);
    rig.ns(1_000_000_000);
    for (t, want_tick, want_width) in [(NodeType::Switch, 0xFF, 4), (NodeType::Ca, 0xF9, 2)] {
        let (_, p, lid) = rig.first(t);
        let idle = rig.control(lid);
        assert_eq!(
            (idle.tick, idle.counter_width, idle.sample_mechanisms),
            (want_tick, want_width, 0),
            "{t:?}"
        );
        let tick = tick_ns(idle.tick);
        // Half a second is expressible in the timers' width.
        assert!(500_000_000 / tick <= width_max(idle.counter_width));

        let (start, interval) = (1_000u32, 5_000u32);
        let r = rig.set(lid, &sample(p, start, interval, &MANDATORY));
        assert_eq!(r.sample_status, samples::STATUS_STARTING);
        rig.ns(u64::from(start) * tick - 1);
        assert_eq!(rig.control(lid).sample_status, 1, "{t:?} 1 ns before start");
        rig.ns(1);
        assert_eq!(rig.control(lid).sample_status, 2, "{t:?} at start");
        rig.ns(u64::from(interval) * tick - 1);
        assert_eq!(rig.result(lid).sample_status, 2, "{t:?} 1 ns before end");
        rig.ns(1);
        assert_eq!(rig.result(lid).sample_status, 0, "{t:?} at end");
        assert_eq!(rig.control(lid).sample_status, 0);
    }
}

#[test]
fn counter_width_limits_timers_and_saturates_results() {
    let mut rig = Rig::new(22, true);
    rig.ns(2_000_000_000);
    // CA: 24 bits. Upper bits of SampleStart/SampleInterval are ignored.
    let (_, p, lid) = rig.first(NodeType::Ca);
    let c = rig.control(lid);
    let max = width_max(c.counter_width);
    assert_eq!(max, 0xFF_FFFF);
    let tick = tick_ns(c.tick);
    let r = rig.set(lid, &sample(p, 0xAB00_000A, 0xCD00_0014, &MANDATORY));
    assert_eq!((r.sample_start, r.sample_interval), (10, 20));
    assert_eq!(rig.control(lid).sample_interval, 20);
    rig.ns(30 * tick - 1);
    assert_eq!(rig.result(lid).sample_status, 2, "timers use 10 + 20 ticks");
    rig.ns(1);
    assert_eq!(rig.result(lid).sample_status, 0);

    // Switch: 32 bits, the whole value is kept.
    let (_, sp, slid) = rig.first(NodeType::Switch);
    let sc = rig.control(slid);
    assert_eq!(width_max(sc.counter_width), u64::from(u32::MAX));
    let r = rig.set(slid, &sample(sp, 0xAB00_000A, 0x8000_0001, &MANDATORY));
    assert_eq!(
        (r.sample_start, r.sample_interval),
        (0xAB00_000A, 0x8000_0001)
    );

    // The busiest CA port over the longest interval: data saturates at
    // all ones in 24 bits instead of wrapping.
    let (p, lid) = rig
        .cabled()
        .into_iter()
        .filter(|(n, _, _)| n.id.node_type == NodeType::Ca)
        .map(|(_, p, lid)| (p, lid))
        .max_by_key(|&(p, lid)| rig.pcx(lid, p).xmit_data)
        .unwrap();
    let r = rig.set(lid, &sample(p, 0, u32::MAX, &MANDATORY));
    assert_eq!(r.sample_interval, 0xFF_FFFF);
    assert_eq!(r.sample_status, 2, "SampleStart 0 starts at once");
    let a = rig.pcx(lid, p);
    rig.ns(0xFF_FFFF * tick);
    let b = rig.pcx(lid, p);
    let res = rig.result(lid);
    assert_eq!(res.sample_status, 0);
    let diffs = [
        b.xmit_data - a.xmit_data,
        b.rcv_data - a.rcv_data,
        b.xmit_pkts - a.xmit_pkts,
        b.rcv_pkts - a.rcv_pkts,
    ];
    assert!(diffs[0] > max, "busy enough to saturate: {}", diffs[0]);
    for (i, d) in diffs.iter().enumerate() {
        assert_eq!(u64::from(res.counters[i]), (*d).min(max), "counter {i}");
    }
    assert!(res.counters.iter().all(|&c| u64::from(c) <= max));
    // PortSamplesResultExtended: the same sample in 64 bits, not held.
    let ext = samples::PortSamplesResultExtended::decode(&rig.ok(
        lid,
        method::GET,
        attr::PORT_SAMPLES_RESULT_EXTENDED,
        &[0; 192],
    ));
    assert_eq!((ext.sample_status, ext.extended_width), (0, 2));
    assert_eq!(ext.tag, res.tag);
    for (i, d) in diffs.iter().enumerate() {
        assert_eq!(ext.counters[i], *d, "extended counter {i}");
    }
}

#[test]
fn optional_quantities_follow_masks_option_bits_and_opcode() {
    let mut rig = Rig::new(23, true);
    rig.ns(1_000_000_000);
    let (_, p, lid) = rig.first(NodeType::Switch);
    let c = rig.control(lid);
    let bit = |b: u32| c.option_mask & (1u64 << b) != 0;
    assert!(!bit(0), "bit 0 reserved");
    assert!(!bit(1), "PortXmitQueue is not modelled");
    assert!(
        bit(2) && bit(3) && bit(4) && bit(5),
        "per-VL data and packets"
    );
    assert!(bit(16) && bit(17), "PortOpRcvPkts/Data");
    assert_eq!(c.counter_masks[..4], [0b011; 4]);
    assert!(c.counter_masks[4..].iter().all(|&m| m == 0b001));
    assert_eq!((c.vendor_mask, c.samples_only_option_mask), (0, 0));

    let sels = [
        0x4001, // 0: PortXmitDataVL[0]
        0x4101, // 1: PortXmitDataVL[1]
        0x4003, // 2: PortXmitPktVL[0]
        0x400F, // 3: PortOpRcvPkts
        0x4001, // 4: optional on a mandatory-only counter
        0x0001, // 5
        0x0003, // 6
        0x0004, // 7
        0x4000, // 8: PortXmitQueue[0], not implemented
        0x0000, // 9: reserved
        0x0006, // 10: reserved
        0xC000, // 11: reserved
    ];
    let interval = (500_000_000 / tick_ns(c.tick)) as u32;
    rig.set(lid, &sample(p, 0, interval, &sels));
    rig.ns(600_000_000);
    let r = rig.result(lid);
    assert_eq!(r.sample_status, 0);
    let k = r.counters;
    assert!(k[5] > 0 && k[6] > 0 && k[7] > 0, "{k:?}");
    assert_eq!(k[0], k[5], "all traffic is on VL0");
    assert_eq!(k[1], 0, "nothing on VL1");
    assert_eq!(k[2], k[6]);
    assert_eq!(k[3], k[7], "OpCode 0xFF: all opcodes");
    assert_eq!(&k[8..], &[0; 7]);
    assert_eq!(k[4], 0, "Counter4 takes mandatory quantities only");

    // Another OpCode: opcode-specific quantities read zero, the rest not.
    let mut c2 = sample(p, 0, interval, &sels);
    c2.op_code = 0x04;
    rig.set(lid, &c2);
    rig.ns(600_000_000);
    let k = rig.result(lid).counters;
    assert!(k[7] > 0);
    assert_eq!(k[3], 0);
    assert_eq!(k[0], k[5]);

    // A CA advertises fewer options and two optional-capable counters.
    let (_, cp, clid) = rig.first(NodeType::Ca);
    let cc = rig.control(clid);
    assert_eq!(cc.option_mask & (1 << 6), 0, "no PortLocalPhysicalErrors");
    assert_ne!(cc.option_mask & (1 << 3), 0, "PortRcvDataVL[n]");
    assert_eq!(cc.counter_masks[..3], [0b011, 0b011, 0b001]);
    let sels = [0x4005, 0x4002, 0x4002, 0x0002];
    let interval = (500_000_000 / tick_ns(cc.tick)) as u32;
    rig.set(clid, &sample(cp, 0, interval, &sels));
    rig.ns(600_000_000);
    let k = rig.result(clid).counters;
    assert!(k[3] > 0);
    assert_eq!(k[0], 0, "not advertised on a CA");
    assert_eq!(k[1], k[3], "PortRcvDataVL[0] = PortRcvData");
    assert_eq!(k[2], 0, "Counter2 of a CA is mandatory-only");
}

#[test]
fn error_and_congestion_quantities_match_port_counters() {
    let mut rig = Rig::new(24, true);
    // Probe an hour of traffic to pick, per switch, the port with the most
    // receive errors and discards.
    rig.ns(3_600_000_000_000);
    let mut picks = Vec::new();
    for n in rig
        .nodes()
        .into_iter()
        .filter(|n| n.id.node_type == NodeType::Switch)
    {
        let best = n
            .ports
            .iter()
            .filter(|p| p.remote().is_some())
            .map(|p| p.num)
            .max_by_key(|&p| {
                let c = rig.pc(n.id.lid, p);
                u32::from(c.rcv_errors) + u32::from(c.xmit_discards)
            })
            .unwrap();
        picks.push((n.id.lid, best));
    }
    let tick = tick_ns(rig.control(picks[0].0).tick);
    let interval = (3_600_000_000_000 / tick) as u32;
    let sels = [0x4005, 0x400E, 0x4030, 0x4016, samples::Q_XMIT_WAIT, 0x4116];
    let mut before = Vec::new();
    for &(lid, p) in &picks {
        let r = rig.set(lid, &sample(p, 0, interval, &sels));
        assert_eq!(r.sample_status, 2);
        before.push(rig.pc(lid, p));
    }
    rig.ns(u64::from(interval) * tick);
    let (mut errs, mut discards) = (0, 0);
    for (&(lid, p), a) in picks.iter().zip(before) {
        let b = rig.pc(lid, p);
        let k = rig.result(lid).counters;
        let rcv = u32::from(b.rcv_errors - a.rcv_errors);
        let dis = u32::from(b.xmit_discards - a.xmit_discards);
        assert_eq!(k[0], rcv, "PortLocalPhysicalErrors = PortRcvErrors");
        assert_eq!(k[1], dis, "PortSwHOQLifetimeLimitDiscards");
        assert_eq!(k[2], dis, "SwPortVLCongestion[0]");
        assert_eq!(k[3], k[4], "PortVLXmitWait[0] = PortXmitWait");
        assert_eq!(k[5], 0, "PortVLXmitWait[1]");
        errs += rcv;
        discards += dis;
    }
    assert!(
        errs > 0 && discards > 0,
        "{errs} errors, {discards} discards"
    );
}

#[test]
fn set_start_status_tag_and_collisions() {
    let mut rig = Rig::new(25, true);
    rig.ns(1_000_000_000);
    let (_, p, lid) = rig.first(NodeType::Switch);
    let tick = tick_ns(rig.control(lid).tick);
    let mut a = sample(p, 100, 1_000, &MANDATORY);
    a.tag = 0x1111;
    let r = rig.set(lid, &a);
    assert_eq!((r.tag, r.sample_status), (0x1111, 1));
    let res = rig.result(lid);
    assert_eq!(
        (res.tag, res.sample_status, res.counters),
        (0x1111, 1, [0; 15])
    );

    // Another application's Set while the start timer runs: ignored, and
    // the reply's Tag says who owns the mechanism.
    let mut b = sample(p, 0, 5, &[samples::Q_RCV_PKTS]);
    b.tag = 0x2222;
    let r = rig.set(lid, &b);
    assert_eq!(
        (
            r.tag,
            r.sample_status,
            r.sample_interval,
            r.counter_select[0]
        ),
        (0x1111, 1, 1_000, samples::Q_XMIT_DATA)
    );
    rig.ns(500 * tick);
    let r = rig.set(lid, &b);
    assert_eq!((r.tag, r.sample_status), (0x1111, 2), "also while sampling");
    let running = rig.result(lid);
    assert_eq!(running.sample_status, 2);
    assert!(running.counters[2] > 0, "running count while sampling");

    rig.ns(600 * tick);
    let done = rig.result(lid);
    assert_eq!((done.tag, done.sample_status), (0x1111, 0));
    assert!(done.counters[2] > running.counters[2]);
    rig.ns(10_000_000_000);
    assert_eq!(rig.result(lid), done, "results freeze");

    // Now the mechanism is free.
    let r = rig.set(lid, &b);
    assert_eq!((r.tag, r.sample_status), (0x2222, 2), "SampleStart 0");
    // SampleStart 0 and SampleInterval 0: complete at once, zero results.
    rig.ns(5 * tick);
    let mut z = sample(p, 0, 0, &MANDATORY);
    z.tag = 0x3333;
    assert_eq!(rig.set(lid, &z).sample_status, 0);
    let res = rig.result(lid);
    assert_eq!(
        (res.tag, res.sample_status, res.counters),
        (0x3333, 0, [0; 15])
    );
}

#[test]
fn port_select_and_attribute_modifier_rules() {
    let mut rig = Rig::new(26, true);
    rig.ns(1_000_000_000);
    let nodes = rig.nodes();
    let ca = &rig.dual_port_ca();
    let lid1 = ca.port(1).unwrap().lid;
    // Power-on PortSelect of a CA is its own port, so a read-modify-write
    // of the control is accepted.
    let initial = rig.control(lid1);
    assert_eq!(initial.port_select, 1);
    assert_eq!(initial.op_code, 0xFF);
    assert_eq!(initial.counter_select[..5], MANDATORY);
    assert_eq!(rig.set(lid1, &initial).sample_status, 0);

    let mut d = [0u8; 192];
    for ps in [2u8, 0xFF, 0] {
        sample(ps, 0, 10, &MANDATORY).encode(&mut d);
        assert_eq!(
            rig.status(lid1, method::SET, attr::PORT_SAMPLES_CONTROL, 0, &d),
            status::INVALID_FIELD,
            "CA PortSelect {ps}"
        );
        // A Get ignores the request's fields.
        assert_eq!(
            rig.status(lid1, method::GET, attr::PORT_SAMPLES_CONTROL, 0, &d),
            status::OK
        );
    }
    // AttributeModifier: 0 or 0xFFFFFFFF (all mechanisms).
    sample(1, 0, 10, &MANDATORY).encode(&mut d);
    for (m, want) in [(1u32, status::INVALID_FIELD), (0xFFFF_FFFF, status::OK)] {
        assert_eq!(
            rig.status(lid1, method::GET, attr::PORT_SAMPLES_CONTROL, m, &d),
            want
        );
        assert_eq!(
            rig.status(lid1, method::GET, attr::PORT_SAMPLES_RESULT, m, &d),
            want
        );
        assert_eq!(
            rig.status(lid1, method::SET, attr::PORT_SAMPLES_CONTROL, m, &d),
            want
        );
    }
    assert_eq!(
        rig.status(lid1, method::SET, attr::PORT_SAMPLES_RESULT, 7, &d),
        status::METHOD_ATTR_UNSUPPORTED
    );

    // Switch: a PortSelect that is not a port runs the timers, counts 0.
    let sw = nodes
        .iter()
        .find(|n| n.id.node_type == NodeType::Switch)
        .unwrap();
    let tick = tick_ns(rig.control(sw.id.lid).tick);
    let r = rig.set(
        sw.id.lid,
        &sample(sw.id.num_ports + 1, 10, 1_000, &MANDATORY),
    );
    assert_eq!((r.sample_status, r.port_select), (1, sw.id.num_ports + 1));
    rig.ns(10 * tick);
    assert_eq!(rig.control(sw.id.lid).sample_status, 2);
    rig.ns(1_000 * tick);
    let res = rig.result(sw.id.lid);
    assert_eq!((res.sample_status, res.counters), (0, [0; 15]));

    // 0xFF sums every port of the switch.
    let interval = 100_000u32;
    rig.set(sw.id.lid, &sample(0xFF, 0, interval, &MANDATORY));
    let ports: Vec<u8> = (0..=sw.id.num_ports).collect();
    let a: Vec<_> = ports.iter().map(|&p| rig.pcx(sw.id.lid, p)).collect();
    rig.ns(u64::from(interval) * tick);
    let b: Vec<_> = ports.iter().map(|&p| rig.pcx(sw.id.lid, p)).collect();
    let sum = |f: fn(&PortCountersExtended) -> u64| -> u64 {
        a.iter().zip(&b).map(|(x, y)| f(y) - f(x)).sum()
    };
    let res = rig.result(sw.id.lid);
    assert!(res.counters[2] > 0);
    assert_eq!(u64::from(res.counters[0]), sum(|c| c.xmit_data));
    assert_eq!(u64::from(res.counters[1]), sum(|c| c.rcv_data));
    assert_eq!(u64::from(res.counters[2]), sum(|c| c.xmit_pkts));
    assert_eq!(u64::from(res.counters[3]), sum(|c| c.rcv_pkts));
}

#[test]
fn results_equal_port_counter_differences_on_every_port() {
    let mut rig = Rig::new(27, true);
    rig.ns(3_000_000_000);
    let mut checked = 0;
    let mut saturated = 0;
    for (n, p, lid) in rig.cabled() {
        let c = rig.control(lid);
        let tick = tick_ns(c.tick);
        let max = width_max(c.counter_width);
        let (start, interval) = (37u32, (500_000_000 / tick) as u32);
        let r = rig.set(lid, &sample(p, start, interval, &MANDATORY));
        assert_eq!(r.sample_status, 1, "{}[{p}]", n.id.description);
        rig.ns(u64::from(start) * tick);
        let (x0, w0) = (rig.pcx(lid, p), rig.pc(lid, p).xmit_wait);
        rig.ns(u64::from(interval) * tick);
        let (x1, w1) = (rig.pcx(lid, p), rig.pc(lid, p).xmit_wait);
        rig.ns(1_000_000);
        let res = rig.result(lid);
        assert_eq!(res.sample_status, 0);
        let want = [
            x1.xmit_data - x0.xmit_data,
            x1.rcv_data - x0.rcv_data,
            x1.xmit_pkts - x0.xmit_pkts,
            x1.rcv_pkts - x0.rcv_pkts,
            u64::from(w1 - w0),
        ];
        for (i, w) in want.iter().enumerate() {
            assert_eq!(
                u64::from(res.counters[i]),
                (*w).min(max),
                "{}[{p}] counter {i}",
                n.id.description
            );
            if *w > max {
                saturated += 1;
            }
        }
        assert!(res.counters[2] > 0, "{}[{p}] has traffic", n.id.description);
        checked += 1;
    }
    assert!(checked >= 40, "{checked} ports");
    assert!(saturated > 0, "some 24-bit CA counters saturate in 0.5 s");
}

#[test]
fn real_clock_sample_finishes_within_its_interval_plus_a_tick() {
    let mut rig = Rig::real_time(28);
    let (_, p, lid) = rig.first(NodeType::Ca);
    let tick = Duration::from_nanos(tick_ns(rig.control(lid).tick));
    let interval = Duration::from_millis(300);
    let ticks = (interval.as_nanos() / tick.as_nanos()) as u32;
    let t0 = Instant::now();
    let r = rig.set(lid, &sample(p, 0, ticks, &MANDATORY));
    let t1 = Instant::now();
    assert_eq!(r.sample_status, 2);
    let done_by = interval + tick;
    loop {
        let before = Instant::now();
        let st = rig.result(lid).sample_status;
        let after = Instant::now();
        if after.duration_since(t0) < interval {
            assert_eq!(st, 2, "not done before {interval:?}");
        }
        if before.duration_since(t1) >= done_by {
            assert_eq!(st, 0, "done by {done_by:?} after the Set");
        }
        if st == 0 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "sample never ended");
        std::thread::sleep(Duration::from_millis(2));
    }
    // Later reads stay done and carry the counts.
    let res = rig.result(lid);
    assert_eq!(res.sample_status, 0);
    assert!(res.counters[2] > 0);
}
