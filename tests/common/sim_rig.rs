//! A simulated fabric driven only through encoded MADs, for the simulator's
//! tests. Include with `#[path = "common/sim_rig.rs"] mod sim_rig;`.
#![allow(dead_code)]

use std::time::Duration;

use ibpm_agentx::ib::topology;
use ibpm_agentx::ib::{Node, NodeType};
use ibpm_agentx::pm::mad::{self, attr, method, status};
use ibpm_agentx::pm::{PortCounters, PortCountersExtended, PortSamplesControl, PortSamplesResult};
use ibpm_agentx::sim::{ManualClock, SimClock, SimFabric, SimOptions, SimTransport};
use ibpm_agentx::transport::{MadAddr, MadTransport};

pub struct Rig {
    pub sim: SimFabric,
    pub clock: ManualClock,
    pub tr: SimTransport,
    pub tid: u64,
}

impl Rig {
    /// The default fabric on a manual clock.
    pub fn new(seed: u64, traffic: bool) -> Rig {
        let clock = ManualClock::new();
        Rig::with_clock(seed, traffic, SimClock::Manual(clock.clone()), clock)
    }

    /// The default fabric on the real clock.
    pub fn real_time(seed: u64) -> Rig {
        Rig::with_clock(seed, true, SimClock::Real, ManualClock::new())
    }

    fn with_clock(seed: u64, traffic: bool, c: SimClock, clock: ManualClock) -> Rig {
        let sim = SimFabric::new(
            topology::default_fabric(),
            SimOptions {
                seed,
                traffic,
                clock: c,
            },
        );
        let tr = sim.transport();
        Rig {
            sim,
            clock,
            tr,
            tid: 0x1234_0000,
        }
    }

    pub fn advance(&self, secs: f64) {
        self.clock.advance(Duration::from_secs_f64(secs));
    }

    pub fn ns(&self, ns: u64) {
        self.clock.advance(Duration::from_nanos(ns));
    }

    /// One request/reply; `None` when nothing answers.
    pub fn mad(
        &mut self,
        lid: u16,
        meth: u8,
        attr_id: u16,
        data: &[u8; 192],
    ) -> Option<(u16, [u8; 192])> {
        self.mad_mod(lid, meth, attr_id, 0, data)
    }

    /// One request/reply with an AttributeModifier; `None` when nothing
    /// answers.
    pub fn mad_mod(
        &mut self,
        lid: u16,
        meth: u8,
        attr_id: u16,
        attr_mod: u32,
        data: &[u8; 192],
    ) -> Option<(u16, [u8; 192])> {
        self.tid += 1;
        let req = mad::request(meth, attr_id, attr_mod, self.tid, data);
        self.tr.send(&MadAddr::gsi(lid), &req).unwrap();
        // The simulator answers at once; the wait only bounds a silence.
        let r = self.tr.recv(Duration::from_millis(50)).unwrap()?;
        let (h, d) = mad::parse(&r.mad[..]).unwrap();
        assert_eq!(h.tid, self.tid);
        assert_eq!(h.method, method::GET_RESP);
        assert_eq!((h.attr_id, h.attr_mod), (attr_id, attr_mod));
        assert_eq!(r.from.lid, lid);
        Some((h.status, *d))
    }

    pub fn status(
        &mut self,
        lid: u16,
        meth: u8,
        attr_id: u16,
        attr_mod: u32,
        d: &[u8; 192],
    ) -> u16 {
        self.mad_mod(lid, meth, attr_id, attr_mod, d)
            .expect("an answer")
            .0
    }

    pub fn ok(&mut self, lid: u16, meth: u8, attr_id: u16, data: &[u8; 192]) -> [u8; 192] {
        let (st, d) = self.mad(lid, meth, attr_id, data).expect("an answer");
        assert_eq!(st, status::OK, "lid {lid} attr {attr_id:#x}");
        d
    }

    pub fn pc(&mut self, lid: u16, port: u8) -> PortCounters {
        let mut d = [0u8; 192];
        PortCounters::select(port, 0, 0).encode(&mut d);
        PortCounters::decode(&self.ok(lid, method::GET, attr::PORT_COUNTERS, &d))
    }

    pub fn pcx(&mut self, lid: u16, port: u8) -> PortCountersExtended {
        let mut d = [0u8; 192];
        PortCountersExtended::select(port, 0, 0).encode(&mut d);
        PortCountersExtended::decode(&self.ok(lid, method::GET, attr::PORT_COUNTERS_EXTENDED, &d))
    }

    pub fn set(&mut self, lid: u16, c: &PortSamplesControl) -> PortSamplesControl {
        let mut d = [0u8; 192];
        c.encode(&mut d);
        PortSamplesControl::decode(&self.ok(lid, method::SET, attr::PORT_SAMPLES_CONTROL, &d))
    }

    pub fn control(&mut self, lid: u16) -> PortSamplesControl {
        PortSamplesControl::decode(&self.ok(
            lid,
            method::GET,
            attr::PORT_SAMPLES_CONTROL,
            &[0; 192],
        ))
    }

    pub fn result(&mut self, lid: u16) -> PortSamplesResult {
        PortSamplesResult::decode(&self.ok(lid, method::GET, attr::PORT_SAMPLES_RESULT, &[0; 192]))
    }

    pub fn nodes(&self) -> Vec<Node> {
        self.sim.fabric().nodes
    }

    /// (LID, PortSelect) that reaches (node, port).
    pub fn addr(n: &Node, port: u8) -> (u16, u8) {
        (n.pma_lid(port), port)
    }

    /// Every cabled (node, port, LID of its PMA).
    pub fn cabled(&self) -> Vec<(Node, u8, u16)> {
        let mut v = Vec::new();
        for n in self.nodes() {
            for p in n.ports.iter().filter(|p| p.remote.is_some()) {
                let (lid, _) = Self::addr(&n, p.num);
                v.push((n.clone(), p.num, lid));
            }
        }
        v
    }

    /// The first cabled port of a node of type `t`.
    pub fn first(&self, t: NodeType) -> (Node, u8, u16) {
        self.cabled()
            .into_iter()
            .find(|(n, _, _)| n.node_type == t)
            .unwrap()
    }
}
