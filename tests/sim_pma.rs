//! The simulated fabric, driven only through encoded MADs.

#[path = "common/sim_rig.rs"]
mod sim_rig;
use sim_rig::Rig;

use std::time::{Duration, Instant};

use ibpm_agentx::ib::{Guid, NodeType};
use ibpm_agentx::pm::class_port_info::CAP2_ADDITIONAL_PORT_COUNTERS_EXTENDED;
use ibpm_agentx::pm::mad::{self, attr, method, status};
use ibpm_agentx::pm::{
    ClassPortInfo, PortCounters, PortCountersExtended, PortSamplesControl, PortSamplesResult,
    port_counters as pc, samples,
};
use ibpm_agentx::transport::{MadAddr, MadTransport};

#[test]
fn lids_are_assigned_and_stored_back() {
    let rig = Rig::new(1, false);
    let f = rig.sim.fabric();
    let mut lids = Vec::new();
    for n in &f.nodes {
        match n.id.node_type {
            NodeType::Switch => {
                assert!(n.id.lid > 0);
                assert!(n.ports.iter().all(|p| p.lid == n.id.lid));
                lids.push(n.id.lid);
            }
            _ => {
                for p in &n.ports {
                    assert!(p.lid > 0);
                    lids.push(p.lid);
                }
                assert_eq!(n.id.lid, n.ports[0].lid);
            }
        }
    }
    lids.sort();
    let expect: Vec<u16> = (1..=lids.len() as u16).collect();
    assert_eq!(lids, expect, "unique and sequential from 1");
}

#[test]
fn class_port_info_like_ibsim() {
    let mut rig = Rig::new(1, true);
    for n in rig.nodes() {
        let (lid, _) = Rig::addr(&n, 1);
        let cpi =
            ClassPortInfo::decode(&rig.ok(lid, method::GET, attr::CLASS_PORT_INFO, &[0; 192]));
        // ibsim's masks, plus IsRSFECCountersSupported (bit 14).
        let want = if n.id.node_type == NodeType::Switch {
            0x5300
        } else {
            0x5200
        };
        assert_eq!(cpi.capability_mask, want);
        // IsAdditionalPortCountersExtendedSupported on CAs (the default
        // `wide_error_counters`); ibsim sets no CapabilityMask2 bit.
        let want2 = if n.id.node_type == NodeType::Switch {
            0
        } else {
            CAP2_ADDITIONAL_PORT_COUNTERS_EXTENDED
        };
        assert_eq!(
            (cpi.base_version, cpi.class_version, cpi.capability_mask2),
            (1, 1, want2)
        );
        let (st, _) = rig
            .mad(lid, method::SET, attr::CLASS_PORT_INFO, &[0; 192])
            .unwrap();
        assert_eq!(st, status::METHOD_ATTR_UNSUPPORTED);
    }
}

#[test]
fn both_ends_of_every_link_agree_and_data_is_dwords() {
    let mut rig = Rig::new(7, true);
    rig.advance(2.5);
    let nodes = rig.nodes();
    let mut links = 0;
    for (n, p, lid) in rig.cabled() {
        let (rg, rp) = n.port(p).unwrap().remote().unwrap();
        let r = nodes.iter().find(|x| x.id.guid == rg).unwrap();
        let (rlid, _) = Rig::addr(r, rp);
        let a = rig.pcx(lid, p);
        let b = rig.pcx(rlid, rp);
        assert_eq!(a.xmit_data, b.rcv_data);
        assert_eq!(a.xmit_pkts, b.rcv_pkts);
        assert_eq!(a.unicast_xmit_pkts, b.unicast_rcv_pkts);
        assert_eq!(a.multicast_xmit_pkts, b.multicast_rcv_pkts);
        assert_eq!(a.unicast_xmit_pkts + a.multicast_xmit_pkts, a.xmit_pkts);
        assert!(a.xmit_pkts > 0, "traffic on {}[{p}]", n.id.description);
        // Data counts 4-octet words: between a 64-octet and a 4 KiB packet.
        let per_pkt = a.xmit_data / a.xmit_pkts;
        assert!(
            (16..=1024).contains(&per_pkt),
            "{per_pkt} dwords per packet"
        );
        // And no faster than the link (4x SDR = 1 GB/s = 250 M dwords/s).
        let dwords_per_s = n.port(p).unwrap().rate_mbps().unwrap() * 1_000_000 / 8 / 4;
        assert!(a.xmit_data <= dwords_per_s * 25 / 10, "{}", a.xmit_data);
        links += 1;
    }
    assert!(links >= 40);
}

#[test]
fn counters_advance_with_the_clock_only() {
    let mut rig = Rig::new(3, true);
    let (_, p, lid) = rig.cabled()[0].clone();
    let a = rig.pcx(lid, p);
    let b = rig.pcx(lid, p);
    assert_eq!(a, b, "no time, no traffic");
    rig.advance(0.5);
    let c = rig.pcx(lid, p);
    assert!(c.xmit_pkts > a.xmit_pkts && c.rcv_data > a.rcv_data);
    // Same seed, same counters; another seed differs.
    let mut twin = Rig::new(3, true);
    twin.advance(0.5);
    assert_eq!(twin.pcx(lid, p), c);
    let mut other = Rig::new(4, true);
    other.advance(0.5);
    assert_ne!(other.pcx(lid, p), c);
    // traffic: false keeps everything at zero.
    let mut quiet = Rig::new(3, false);
    quiet.advance(100.0);
    assert_eq!(
        quiet.pc(lid, p),
        PortCounters {
            port_select: p,
            ..Default::default()
        }
    );
}

#[test]
fn extended_and_32_bit_agree_until_saturation() {
    let mut rig = Rig::new(11, true);
    rig.advance(1.0);
    for (_, p, lid) in rig.cabled() {
        let a = rig.pc(lid, p);
        let x = rig.pcx(lid, p);
        for (small, big) in [
            (a.xmit_data, x.xmit_data),
            (a.rcv_data, x.rcv_data),
            (a.xmit_pkts, x.xmit_pkts),
            (a.rcv_pkts, x.rcv_pkts),
        ] {
            assert_eq!(u64::from(small), big.min(u64::from(u32::MAX)));
        }
    }
}

#[test]
fn counters_saturate_at_their_widths_while_64_bit_keep_counting() {
    let mut rig = Rig::new(5, true);
    rig.advance(30.0 * 24.0 * 3600.0); // a month
    let mut saturated_data = 0;
    let mut saturated_sym = 0;
    let mut saturated_ler = 0;
    for (_, p, lid) in rig.cabled() {
        let a = rig.pc(lid, p);
        let x = rig.pcx(lid, p);
        if x.xmit_data > u64::from(u32::MAX) {
            assert_eq!(a.xmit_data, u32::MAX);
            saturated_data += 1;
        }
        if a.symbol_errors == u16::MAX {
            saturated_sym += 1;
        }
        if a.link_error_recovery == u8::MAX {
            saturated_ler += 1;
        }
        assert!(a.local_link_integrity_errors <= 0xf && a.excessive_buffer_overrun_errors <= 0xf);
    }
    assert!(
        saturated_data > 20,
        "{saturated_data} saturated data counters"
    );
    assert!(
        saturated_sym > 0,
        "some noisy links saturate SymbolErrorCounter"
    );
    assert!(saturated_ler > 0, "and LinkErrorRecoveryCounter (8 bits)");
    // Saturated counters stay there.
    let (_, p, lid) = rig.cabled()[0].clone();
    let before = rig.pc(lid, p);
    rig.advance(3600.0);
    let after = rig.pc(lid, p);
    if before.xmit_data == u32::MAX {
        assert_eq!(after.xmit_data, u32::MAX);
    }
}

/// Where CapabilityMask2 bit 1 is set (CAs), PortCountersExtended's error
/// counters and PortXmitWait count past the PortCounters widths and clear
/// by CounterSelect2; elsewhere they read 0.
#[test]
fn extended_error_counters_count_where_the_capability_bit_says() {
    use ibpm_agentx::sim::traffic::q;
    let mut rig = Rig::new(5, true);
    rig.advance(60.0);
    let (ca, p, ca_lid) = rig.first(NodeType::Ca);
    let (sw, sp, sw_lid) = rig.first(NodeType::Switch);
    for (g, port) in [(ca.id.guid, p), (sw.id.guid, sp)] {
        assert!(rig.sim.add_errors(g, port, q::SYMBOL_ERRORS, 100_000));
        assert!(rig.sim.add_errors(g, port, q::LINK_DOWNED, 1_000));
    }
    let (a, x) = (rig.pc(ca_lid, p), rig.pcx(ca_lid, p));
    assert_eq!((a.symbol_errors, a.link_downed), (u16::MAX, u8::MAX));
    assert!(
        x.symbol_errors >= 100_000 && x.link_downed >= 1_000,
        "{x:?}"
    );
    assert_eq!(x.xmit_wait, u64::from(a.xmit_wait), "below 32 bits");
    let y = rig.pcx(sw_lid, sp);
    assert_eq!((y.symbol_errors, y.link_downed, y.xmit_wait), (0, 0, 0));
    // CounterSelect2 bit 0 clears SymbolErrorCounter alone.
    let mut d = [0u8; 192];
    PortCountersExtended::select(p, 0, 1).encode(&mut d);
    let z = PortCountersExtended::decode(&rig.ok(
        ca_lid,
        method::SET,
        attr::PORT_COUNTERS_EXTENDED,
        &d,
    ));
    assert_eq!((z.symbol_errors, z.link_downed), (0, x.link_downed));
    assert_eq!(
        rig.pc(ca_lid, p).symbol_errors,
        u16::MAX,
        "PortCounters untouched"
    );
}

#[test]
fn set_clears_only_the_selected_counters() {
    let mut rig = Rig::new(9, true);
    rig.advance(3.0);
    let (_, p, lid) = rig.cabled()[0].clone();
    let before = rig.pc(lid, p);
    let before_x = rig.pcx(lid, p);
    let mut d = [0u8; 192];
    PortCounters::select(p, pc::CS_XMIT_DATA | pc::CS_RCV_PKTS, pc::CS2_XMIT_WAIT).encode(&mut d);
    let reply = PortCounters::decode(&rig.ok(lid, method::SET, attr::PORT_COUNTERS, &d));
    assert_eq!(reply.xmit_data, 0);
    assert_eq!(reply.rcv_pkts, 0);
    assert_eq!(reply.xmit_wait, 0);
    assert_eq!(reply.rcv_data, before.rcv_data);
    assert_eq!(reply.xmit_pkts, before.xmit_pkts);
    assert_eq!(reply.counter_select, pc::CS_XMIT_DATA | pc::CS_RCV_PKTS);
    // PortCountersExtended is cleared separately.
    assert_eq!(rig.pcx(lid, p), before_x);
    rig.advance(1.0);
    let later = rig.pc(lid, p);
    let later_x = rig.pcx(lid, p);
    assert!(later.xmit_data > 0);
    assert_eq!(
        u64::from(later.xmit_data),
        later_x.xmit_data - before_x.xmit_data,
        "after a clear the 32-bit counter counts from zero"
    );
    // Clear everything in the extended counters.
    let mut d = [0u8; 192];
    PortCountersExtended::select(p, 0xff, 0).encode(&mut d);
    let x =
        PortCountersExtended::decode(&rig.ok(lid, method::SET, attr::PORT_COUNTERS_EXTENDED, &d));
    assert_eq!(
        (x.xmit_data, x.rcv_data, x.xmit_pkts, x.multicast_rcv_pkts),
        (0, 0, 0, 0)
    );
    assert!(rig.pc(lid, p).rcv_data > 0, "PortCounters untouched");
}

#[test]
fn port_select_rules() {
    let mut rig = Rig::new(2, true);
    rig.advance(0.2);
    let nodes = rig.nodes();
    let ca = &rig.dual_port_ca();
    let lid1 = ca.port(1).unwrap().lid;
    let mut d = [0u8; 192];
    PortCounters::select(2, 0, 0).encode(&mut d);
    assert_eq!(
        rig.mad(lid1, method::GET, attr::PORT_COUNTERS, &d)
            .unwrap()
            .0,
        status::INVALID_FIELD
    );
    PortCounters::select(0xff, 0, 0).encode(&mut d);
    assert_eq!(
        rig.mad(lid1, method::GET, attr::PORT_COUNTERS, &d)
            .unwrap()
            .0,
        status::INVALID_FIELD
    );
    assert_eq!(rig.pc(lid1, 1).port_select, 1);
    assert_eq!(rig.pc(ca.port(2).unwrap().lid, 2).port_select, 2);

    let sw = nodes
        .iter()
        .find(|n| n.id.node_type == NodeType::Switch)
        .unwrap();
    PortCounters::select(sw.id.num_ports + 1, 0, 0).encode(&mut d);
    assert_eq!(
        rig.mad(sw.id.lid, method::GET, attr::PORT_COUNTERS, &d)
            .unwrap()
            .0,
        status::INVALID_FIELD
    );
    PortCountersExtended::select(sw.id.num_ports + 1, 0, 0).encode(&mut d);
    assert_eq!(
        rig.mad(sw.id.lid, method::GET, attr::PORT_COUNTERS_EXTENDED, &d)
            .unwrap()
            .0,
        status::INVALID_FIELD
    );
    // Port 0 and unconnected ports read zero.
    assert_eq!(rig.pcx(sw.id.lid, 0).xmit_pkts, 0);
    let idle = sw.ports.iter().find(|p| p.remote().is_none()).unwrap().num;
    assert_eq!(rig.pcx(sw.id.lid, idle).rcv_data, 0);
    // 0xFF sums the ports.
    let mut sum_pkts = 0u64;
    let mut sum_x = 0u64;
    for p in 0..=sw.id.num_ports {
        sum_pkts += u64::from(rig.pc(sw.id.lid, p).xmit_pkts);
        sum_x += rig.pcx(sw.id.lid, p).rcv_data;
    }
    let all = rig.pc(sw.id.lid, 0xff);
    assert_eq!(all.port_select, 0xff);
    assert_eq!(u64::from(all.xmit_pkts), sum_pkts.min(u64::from(u32::MAX)));
    assert_eq!(rig.pcx(sw.id.lid, 0xff).rcv_data, sum_x);
}

#[test]
fn unsupported_requests_get_status_codes() {
    let mut rig = Rig::new(2, true);
    // The first node is a CA: it does not answer SwPortVLCongestion (0x30).
    let lid = rig.nodes()[0].ports[0].lid;
    assert_ne!(rig.nodes()[0].id.node_type, NodeType::Switch);
    for a in [0x001Bu16, 0x0030, 0x0038, 0x1234] {
        assert_eq!(
            rig.mad(lid, method::GET, a, &[0; 192]).unwrap().0,
            status::METHOD_ATTR_UNSUPPORTED
        );
    }
    assert_eq!(
        rig.mad(lid, method::SET, attr::PORT_SAMPLES_RESULT, &[0; 192])
            .unwrap()
            .0,
        status::METHOD_ATTR_UNSUPPORTED
    );
    assert_eq!(
        rig.mad(lid, 0x03, attr::PORT_COUNTERS, &[0; 192])
            .unwrap()
            .0,
        status::METHOD_UNSUPPORTED
    );
    // Bad class version.
    let mut req = mad::request(method::GET, attr::PORT_COUNTERS, 0, 77, &[0; 192]);
    req[2] = 2;
    rig.tr.send(&MadAddr::gsi(lid), &req).unwrap();
    let r = rig.tr.recv(Duration::from_millis(50)).unwrap().unwrap();
    assert_eq!(
        mad::parse(&r.mad[..]).unwrap().0.status,
        status::BAD_VERSION
    );
    // Another class, or a response: no answer.
    let mut other = mad::request(method::GET, 0x12, 0, 78, &[0; 192]);
    other[1] = 0x81;
    rig.tr.send(&MadAddr::gsi(lid), &other).unwrap();
    let resp = mad::response(&mad::parse(&req).unwrap().0, 0, &[0; 192]);
    rig.tr.send(&MadAddr::gsi(lid), &resp).unwrap();
    assert!(rig.tr.recv(Duration::from_millis(20)).unwrap().is_none());
    // Unknown LID.
    assert!(
        rig.mad(0xBFFF, method::GET, attr::CLASS_PORT_INFO, &[0; 192])
            .is_none()
    );
}

#[test]
fn unreachable_nodes_answer_nothing() {
    let mut rig = Rig::new(2, true);
    let n = rig
        .nodes()
        .into_iter()
        .find(|n| n.id.node_type == NodeType::Switch)
        .unwrap();
    rig.sim.set_reachable(n.id.guid, false);
    let t = Instant::now();
    assert!(
        rig.mad(n.id.lid, method::GET, attr::CLASS_PORT_INFO, &[0; 192])
            .is_none()
    );
    assert!(
        t.elapsed() >= Duration::from_millis(15),
        "recv waited for its timeout"
    );
    assert!(t.elapsed() < Duration::from_secs(2));
    rig.sim.set_reachable(Guid(n.id.guid.0), true);
    assert!(
        rig.mad(n.id.lid, method::GET, attr::CLASS_PORT_INFO, &[0; 192])
            .is_some()
    );
}

#[test]
fn xmit_wait_grows_on_congested_links_only() {
    let mut rig = Rig::new(1, true);
    let congested = rig.sim.congested_ports();
    assert!(!congested.is_empty(), "the model has congested links");
    rig.advance(10.0);
    let mut seen = 0;
    for (n, p, lid) in rig.cabled() {
        let w = rig.pc(lid, p).xmit_wait;
        if congested.contains(&(n.id.guid, p)) {
            assert!(w > 0, "{}[{p}] congested", n.id.description);
            seen += 1;
        } else {
            assert_eq!(w, 0, "{}[{p}] not congested", n.id.description);
        }
    }
    assert_eq!(seen, congested.len());
    assert!(seen < rig.cabled().len(), "not every link is congested");
}

#[test]
fn transport_clones_share_the_queue_and_recv_times_out() {
    let rig = Rig::new(2, true);
    let mut a = rig.tr.clone();
    let mut b = a.clone();
    let mut c = rig.sim.transport();
    let lid = rig.nodes()[0].ports[0].lid;
    let req = mad::request(method::GET, attr::CLASS_PORT_INFO, 0, 5, &[0; 192]);
    a.send(&MadAddr::gsi(lid), &req).unwrap();
    assert!(
        c.recv(Duration::from_millis(10)).unwrap().is_none(),
        "separate queue"
    );
    assert!(
        b.recv(Duration::from_millis(10)).unwrap().is_some(),
        "shared queue"
    );
    // A receiver blocked in recv wakes when another thread's send answers.
    let handle = std::thread::spawn(move || b.recv(Duration::from_secs(5)).unwrap());
    // Time for the thread to block in recv (it gets the answer either way;
    // nothing outside it says when it blocks).
    std::thread::sleep(Duration::from_millis(50));
    a.send(&MadAddr::gsi(lid), &req).unwrap();
    assert!(handle.join().unwrap().is_some());
}

fn psc_set(rig: &mut Rig, lid: u16, c: &PortSamplesControl) -> PortSamplesControl {
    let mut d = [0u8; 192];
    c.encode(&mut d);
    PortSamplesControl::decode(&rig.ok(lid, method::SET, attr::PORT_SAMPLES_CONTROL, &d))
}

fn psc_get(rig: &mut Rig, lid: u16) -> PortSamplesControl {
    PortSamplesControl::decode(&rig.ok(lid, method::GET, attr::PORT_SAMPLES_CONTROL, &[0; 192]))
}

fn psr_get(rig: &mut Rig, lid: u16) -> PortSamplesResult {
    PortSamplesResult::decode(&rig.ok(lid, method::GET, attr::PORT_SAMPLES_RESULT, &[0; 192]))
}

#[test]
fn sample_state_machine() {
    let mut rig = Rig::new(13, true);
    rig.advance(1.0);
    // A switch port with traffic.
    let (sw, p, lid) = rig
        .cabled()
        .into_iter()
        .find(|(n, _, _)| n.id.node_type == NodeType::Switch)
        .unwrap();
    let idle = psc_get(&mut rig, lid);
    assert_eq!(idle.sample_status, samples::STATUS_DONE);
    assert_eq!((idle.tick, idle.counter_width), (0xFF, 4));
    assert!(
        idle.counter_masks.iter().all(|m| m & 1 == 1),
        "mandatory everywhere"
    );
    let mut c = PortSamplesControl {
        port_select: p,
        tag: 0xBEEF,
        sample_start: 100_000,      // ticks of 1.024 us: ~0.1 s
        sample_interval: 1_000_000, // ~1.024 s
        ..Default::default()
    };
    c.counter_select[..7].copy_from_slice(&[
        samples::Q_XMIT_DATA,
        samples::Q_RCV_DATA,
        samples::Q_XMIT_PKTS,
        samples::Q_RCV_PKTS,
        samples::Q_XMIT_WAIT,
        0x4001, // optional, not implemented: reads 0
        0x0000,
    ]);
    let r = psc_set(&mut rig, lid, &c);
    assert_eq!(r.sample_status, samples::STATUS_STARTING);
    assert_eq!(
        (r.tag, r.port_select, r.sample_interval),
        (0xBEEF, p, 1_000_000)
    );
    assert_eq!(r.counter_select, c.counter_select);
    let res = psr_get(&mut rig, lid);
    assert_eq!(
        (res.tag, res.sample_status, res.counters),
        (0xBEEF, 1, [0; 15])
    );

    // Exactly at the start, read the 64-bit counters for reference.
    rig.clock.advance(Duration::from_nanos(100_000 * 1024));
    let x0 = rig.pcx(lid, p);
    let pc0 = rig.pc(lid, p);
    assert_eq!(
        psc_get(&mut rig, lid).sample_status,
        samples::STATUS_RUNNING
    );
    rig.advance(0.5);
    let mid = psr_get(&mut rig, lid);
    assert_eq!(mid.sample_status, samples::STATUS_RUNNING);
    assert!(mid.counters[2] > 0);
    // Exactly at the end.
    rig.clock
        .advance(Duration::from_nanos(1_000_000 * 1024) - Duration::from_secs_f64(0.5));
    let x1 = rig.pcx(lid, p);
    let pc1 = rig.pc(lid, p);
    rig.advance(5.0); // later reads do not change the result
    let done = psr_get(&mut rig, lid);
    assert_eq!(done.sample_status, samples::STATUS_DONE);
    assert_eq!(psc_get(&mut rig, lid).sample_status, samples::STATUS_DONE);
    assert_eq!(
        u64::from(done.counters[0]),
        x1.xmit_data - x0.xmit_data,
        "{}",
        sw.id.description
    );
    assert_eq!(u64::from(done.counters[1]), x1.rcv_data - x0.rcv_data);
    assert_eq!(u64::from(done.counters[2]), x1.xmit_pkts - x0.xmit_pkts);
    assert_eq!(u64::from(done.counters[3]), x1.rcv_pkts - x0.rcv_pkts);
    assert_eq!(done.counters[4], pc1.xmit_wait - pc0.xmit_wait);
    assert_eq!(&done.counters[5..], &[0; 10]);

    // A long interval on a busy port truncates at the 32-bit width.
    let busy = rig
        .cabled()
        .into_iter()
        .filter(|(n, _, _)| n.id.node_type == NodeType::Switch)
        .max_by_key(|(_, p, lid)| rig.pcx(*lid, *p).xmit_data)
        .unwrap();
    let mut c = PortSamplesControl {
        port_select: busy.1,
        sample_interval: u32::MAX,
        ..Default::default()
    };
    c.counter_select[0] = samples::Q_XMIT_DATA;
    c.counter_select[1] = samples::Q_XMIT_PKTS;
    psc_set(&mut rig, busy.2, &c);
    let a = rig.pcx(busy.2, busy.1);
    rig.clock
        .advance(Duration::from_nanos(u64::from(u32::MAX) * 1024));
    let b = rig.pcx(busy.2, busy.1);
    let res = psr_get(&mut rig, busy.2);
    assert_eq!(res.sample_status, 0);
    assert!(
        b.xmit_data - a.xmit_data > u64::from(u32::MAX),
        "busy enough to truncate"
    );
    assert_eq!(res.counters[0], u32::MAX);
    assert_eq!(
        u64::from(res.counters[1]),
        (b.xmit_pkts - a.xmit_pkts).min(u64::from(u32::MAX))
    );

    // A CA samples only the port the MAD arrived on.
    let ca = rig.dual_port_ca();
    let bad = PortSamplesControl {
        port_select: 2,
        ..Default::default()
    };
    let mut d = [0u8; 192];
    bad.encode(&mut d);
    assert_eq!(
        rig.mad(
            ca.port(1).unwrap().lid,
            method::SET,
            attr::PORT_SAMPLES_CONTROL,
            &d
        )
        .unwrap()
        .0,
        status::INVALID_FIELD
    );
}

#[test]
fn optional_attributes_show_the_traffic_model() {
    use ibpm_agentx::pm::optional::{PortOpRcvCounters, PortRcvErrorDetails};
    let mut rig = Rig::new(5, true);
    rig.advance(3600.0);
    let nodes = rig.nodes();
    let mut compared = 0;
    for (n, p, lid) in rig.cabled() {
        let mut d = [0u8; 192];
        d[1] = p;
        let rcv = PortRcvErrorDetails::decode(&rig.ok(lid, method::GET, 0x15, &d));
        let pc = rig.pc(lid, p);
        assert_eq!(
            rcv.local_physical_errors, pc.rcv_errors,
            "{}[{p}]",
            n.id.description
        );
        d[0] = 0xFF;
        let op = PortOpRcvCounters::decode(&rig.ok(lid, method::GET, 0x17, &d));
        assert_eq!((op.opcode, op.op_rcv_pkts), (0xFF, pc.rcv_pkts));
        // One opcode alone is not modelled.
        d[0] = 0x04;
        assert_eq!(
            rig.mad(lid, method::GET, 0x17, &d).unwrap().0,
            status::INVALID_FIELD
        );
        compared += 1;
    }
    assert!(compared >= 40);
    // PortXmitDiscardDetails: switches only.
    let ca = nodes
        .iter()
        .find(|n| n.id.node_type != NodeType::Switch)
        .unwrap();
    let mut d = [0u8; 192];
    d[1] = ca.ports[0].num;
    assert_eq!(
        rig.mad(ca.ports[0].lid, method::GET, 0x16, &d).unwrap().0,
        status::METHOD_ATTR_UNSUPPORTED
    );
}

/// The congestion-control attributes follow the traffic model: a port
/// receives FECN-marked packets exactly when its peer's transmitter is
/// congested, BECN and time in congestion only when its own is, and all
/// traffic is on SL0 and VL0.
#[test]
fn congestion_control_attributes_show_the_traffic_model() {
    use ibpm_agentx::pm::optional::{Lane, PortRcvConCtrl, PortXmitConCtrl, lane_attr};
    let mut rig = Rig::new(5, true);
    let congested = rig.sim.congested_ports();
    rig.advance(60.0);
    let peer_of = |rig: &Rig, g: Guid, p: u8| {
        rig.nodes()
            .iter()
            .find(|n| n.id.guid == g)
            .and_then(|n| n.ports.iter().find(|q| q.num == p))
            .and_then(|q| q.remote())
    };
    let lane = |id, l| lane_attr(id, l).unwrap();
    let (mut fecn_seen, mut compared) = (0, 0);
    for (n, p, lid) in rig.cabled() {
        let mut d = [0u8; 192];
        d[1] = p;
        let rcv = PortRcvConCtrl::decode(&rig.ok(lid, method::GET, attr::PORT_RCV_CON_CTRL, &d));
        let xmit = PortXmitConCtrl::decode(&rig.ok(lid, method::GET, attr::PORT_XMIT_CON_CTRL, &d));
        let (pg, pp) = peer_of(&rig, n.id.guid, p).expect("cabled");
        let peer_congested = congested.contains(&(pg, pp));
        let own_congested = congested.contains(&(n.id.guid, p));
        let what = format!("{}[{p}]", n.id.description);
        assert_eq!(rcv.pkt_rcv_fecn > 0, peer_congested, "FECN {what}");
        assert_eq!(rcv.pkt_rcv_becn > 0, own_congested, "BECN {what}");
        assert_eq!(xmit.xmit_time_cong > 0, own_congested, "TimeCong {what}");
        fecn_seen += usize::from(peer_congested);
        // Per SL and per VL: lane 0 holds the port's count, the rest 0.
        let pcx = rig.pcx(lid, p);
        for (id, l, want) in [
            (
                attr::PORT_SL_RCV_FECN,
                Lane::Sl,
                u64::from(rcv.pkt_rcv_fecn),
            ),
            (
                attr::PORT_SL_RCV_BECN,
                Lane::Sl,
                u64::from(rcv.pkt_rcv_becn),
            ),
            (attr::PORT_XMIT_DATA_SL, Lane::Sl, pcx.xmit_data),
            (attr::PORT_RCV_DATA_SL, Lane::Sl, pcx.rcv_data),
            (
                attr::PORT_VL_XMIT_TIME_CONG,
                Lane::Vl,
                u64::from(xmit.xmit_time_cong),
            ),
        ] {
            let a = lane(id, l);
            let reply = rig.ok(lid, method::GET, id, &d);
            assert_eq!(
                a.get(&reply, 0),
                Some(want.min(a.max())),
                "{id:#x} lane 0 of {what}"
            );
            assert!((1..a.lanes).all(|k| a.get(&reply, k) == Some(0)));
        }
        // SwPortVLCongestion: switches only.
        let sw = rig
            .mad(lid, method::GET, attr::SW_PORT_VL_CONGESTION, &d)
            .unwrap()
            .0;
        if n.id.node_type == NodeType::Switch {
            assert_eq!(sw, status::OK, "{what}");
        } else {
            assert_eq!(sw, status::METHOD_ATTR_UNSUPPORTED, "{what}");
        }
        compared += 1;
    }
    assert!(compared >= 40 && fecn_seen > 0 && fecn_seen < compared);
    // A Set clears what CounterSelect names and leaves the rest.
    let (n, p, lid) = rig
        .cabled()
        .into_iter()
        .find(|(n, p, _)| {
            let (pg, pp) = peer_of(&rig, n.id.guid, *p).unwrap();
            congested.contains(&(pg, pp)) && congested.contains(&(n.id.guid, *p))
        })
        .expect("a link congested both ways");
    let mut d = [0u8; 192];
    d[1] = p;
    d[2..4].copy_from_slice(&1u16.to_be_bytes());
    let after = PortRcvConCtrl::decode(&rig.ok(lid, method::SET, attr::PORT_RCV_CON_CTRL, &d));
    assert_eq!(
        after.pkt_rcv_fecn, 0,
        "{}[{p}] FECN cleared",
        n.id.description
    );
    assert!(after.pkt_rcv_becn > 0, "BECN kept");
}
