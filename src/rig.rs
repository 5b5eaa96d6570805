//! The simulated agent for tests and trials: the built-in simulated fabric
//! on a manual clock, assembled with the sweeper, the write path and the
//! MIB view exactly as [`crate::app`] assembles them for a real fabric, and
//! direct reads of a simulated PMA to compare the agent's answers with.
//!
//! Unit tests, the integration tests under `tests/` and the fuzz crate use
//! this one module instead of assembling the pieces themselves:
//!
//! - [`AgentRig`]: simulator -> sweeper -> controller -> view, with the
//!   clock, the cache and the shared sweep state in reach.
//! - [`PmaRig`]: one encoded MAD at a time to the simulated PMAs through a
//!   simulator transport (the simulator's own tests).
//! - [`pma_get`], [`port_counters`], [`port_counters_extended`]: read what
//!   a simulated PMA holds, bypassing the agent.
//! - [`plain_v3_message`]: an SNMPv3 noAuthNoPriv message built by hand,
//!   for the endpoint's tests.
//! - [`switch_link`]: a link between two switches of a fabric, to break.
//!
//! This is test support: its functions panic (with a message) when the
//! simulator does not answer as a simulator always does.

use std::sync::Arc;
use std::time::Duration;

use crate::fabric::cache::Cache;
use crate::fabric::control::{ControlConfig, Controller};
use crate::fabric::engine::{Engine, EngineConfig};
use crate::fabric::settings::SweepConfig;
use crate::fabric::state::SharedState;
use crate::fabric::sweep::{SweepStats, Sweeper};
use crate::ib::Guid;
use crate::ib::subnet::{LocalPort, SmInfo, SmState, SubnetKey, SubnetView};
use crate::ib::topology;
use crate::ib::{Fabric, Node, NodeType};
use crate::mib::view::MibView;
use crate::pm::mad::{self, attr, method, status};
use crate::pm::{PortCounters, PortCountersExtended, PortSamplesControl, PortSamplesResult};
use crate::sim::{ManualClock, SimClock, SimFabric, SimOptions, SimTransport, VirtualClock};
use crate::transport::{MadAddr, MadTransport};

/// The 192-byte data area of a PM MAD.
pub type PmData = [u8; 192];

/// One request of method `meth` for `attr_id` to the simulated PMA at
/// `lid`, handled synchronously: (MAD status, reply data), or `None` when
/// nothing answers (unknown LID, unreachable node).
pub fn pma_request(
    sim: &SimFabric,
    lid: u16,
    meth: u8,
    attr_id: u16,
    data: &PmData,
) -> Option<(u16, PmData)> {
    let reply = sim.handle(lid, &mad::request(meth, attr_id, 0, 0x5157, data))?;
    let (h, d) = mad::parse(&reply).expect("the simulator answers well-formed MADs");
    Some((h.status, *d))
}

/// Get(`attr_id`) from the simulated PMA at `lid`: the reply's data.
///
/// # Panics
/// When nothing answers or the answer's status is not success.
pub fn pma_get(sim: &SimFabric, lid: u16, attr_id: u16, data: &PmData) -> PmData {
    let (st, d) = pma_request(sim, lid, method::GET, attr_id, data)
        .unwrap_or_else(|| panic!("no answer from the simulated PMA at LID {lid}"));
    assert_eq!(
        st,
        status::OK,
        "MAD status of attribute {attr_id:#x} at LID {lid}"
    );
    d
}

/// PortCounters of `port` straight from the simulated PMA at `lid`.
pub fn port_counters(sim: &SimFabric, lid: u16, port: u8) -> PortCounters {
    let mut d = [0u8; 192];
    PortCounters::select(port, 0, 0).encode(&mut d);
    PortCounters::decode(&pma_get(sim, lid, attr::PORT_COUNTERS, &d))
}

/// PortCountersExtended of `port` straight from the simulated PMA at `lid`.
pub fn port_counters_extended(sim: &SimFabric, lid: u16, port: u8) -> PortCountersExtended {
    let mut d = [0u8; 192];
    PortCountersExtended::select(port, 0, 0).encode(&mut d);
    PortCountersExtended::decode(&pma_get(sim, lid, attr::PORT_COUNTERS_EXTENDED, &d))
}

/// A link between two switches of `f`: its ends (the first found in node
/// order).
pub fn switch_link(f: &crate::ib::Fabric) -> ((Guid, u8), (Guid, u8)) {
    let switch = |g: Guid| {
        f.node(g)
            .is_some_and(|n| n.id.node_type == crate::ib::NodeType::Switch)
    };
    f.nodes
        .iter()
        .filter(|n| switch(n.id.guid))
        .find_map(|n| {
            n.ports.iter().find_map(|p| {
                let peer = p.remote()?;
                switch(peer.0).then_some(((n.id.guid, p.num), peer))
            })
        })
        .expect("a link between two switches")
}

/// A subnet's view as its sweeper publishes it: position `index`, named
/// `name` (else labelled by its key), prefix `prefix`, its master SM of
/// port GUID `sm` at LID `index + 1` (priority 15), swept through
/// `mlx5_<index>:1` with no standby, nothing swept yet.
pub fn subnet(index: u8, name: Option<&str>, prefix: u64, sm: u64) -> SubnetView {
    SubnetView {
        index,
        name: name.map(Arc::from),
        key: SubnetKey {
            prefix,
            sm_guid: Guid(sm),
        },
        sm: Some(SmInfo {
            lid: u16::from(index) + 1,
            guid: Guid(sm),
            priority: 15,
            state: SmState::Master,
            act_count: 1,
        }),
        sweeping: Some(LocalPort::new(&format!("mlx5_{index}"), 1)),
        ..Default::default()
    }
}

/// How an [`AgentRig`] is built. The defaults are the shapes most tests
/// use: the built-in default fabric, seed 1, ten simulated minutes of
/// traffic behind it, and the agent's default sweep, MAD and write
/// settings.
#[derive(Clone, Debug)]
pub struct RigOptions {
    pub fabric: Fabric,
    /// Seed of the simulated traffic.
    pub seed: u64,
    /// Whether links carry traffic.
    pub traffic: bool,
    /// Simulated time already passed when the rig is built.
    pub elapsed: Duration,
    pub sweep: SweepConfig,
    pub engine: EngineConfig,
    pub control: ControlConfig,
}

impl Default for RigOptions {
    fn default() -> Self {
        RigOptions {
            fabric: topology::default_fabric(),
            seed: 1,
            traffic: true,
            elapsed: Duration::from_secs(600),
            sweep: SweepConfig::default(),
            engine: EngineConfig::default(),
            control: ControlConfig::default(),
        }
    }
}

/// The simulated agent: a simulated fabric on a manual clock, the sweeper
/// over its own simulator transport, the write path (controller) over two
/// more, and the cache they fill, all on one virtual time: the agent reads
/// [`AgentRig::time`], which is [`AgentRig::clock`] as instants, and a
/// simulator transport waiting for a reply that does not come moves it on
/// instead of sleeping. Nothing runs on its own: call [`AgentRig::sweep`]
/// or [`AgentRig::step`] and move the clock.
pub struct AgentRig {
    pub sim: SimFabric,
    pub clock: ManualClock,
    /// The agent's time: `clock` as instants.
    pub time: VirtualClock,
    pub cache: Arc<Cache>,
    pub state: SharedState,
    pub sweeper: Sweeper,
    pub controller: Arc<Controller>,
}

impl AgentRig {
    /// The agent over a simulated fabric built from `opts`.
    pub fn new(opts: RigOptions) -> AgentRig {
        AgentRig::with_sweep_transport(opts, |_, t| Box::new(t))
    }

    /// The same with the sweeper's transport wrapped by `wrap` (to drop,
    /// count or rewrite MADs on their way to the simulator).
    pub fn with_sweep_transport(
        opts: RigOptions,
        wrap: impl FnOnce(&SimFabric, SimTransport) -> Box<dyn MadTransport>,
    ) -> AgentRig {
        let clock = ManualClock::new();
        clock.advance(opts.elapsed);
        let sim = SimFabric::new(
            opts.fabric,
            SimOptions {
                seed: opts.seed,
                traffic: opts.traffic,
                clock: SimClock::Manual(clock.clone()),
                ..Default::default()
            },
        );
        let time = VirtualClock::new(clock.clone());
        let transport = || sim.transport().on_virtual_time(time.clone());
        let cache = Arc::new(Cache::new());
        let state = SharedState::new(sim.fabric(), opts.sweep, time.now());
        let engine = Engine::new(wrap(&sim, transport()), opts.engine);
        let sweeper =
            Sweeper::new(state.clone(), engine, Arc::clone(&cache)).with_clock(time.clock());
        let controller = Arc::new(
            Controller::new(
                state.clone(),
                Arc::clone(&cache),
                Box::new(transport()),
                Box::new(transport()),
                opts.control,
            )
            .with_clock(time.clock()),
        );
        AgentRig {
            sim,
            clock,
            time,
            cache,
            state,
            sweeper,
            controller,
        }
    }

    /// The same rig with its sweeper rebuilt by `f` (a state file,
    /// rediscovery, a hook after each publication).
    pub fn with_sweeper(self, f: impl FnOnce(Sweeper) -> Sweeper) -> AgentRig {
        AgentRig {
            sweeper: f(self.sweeper),
            ..self
        }
    }

    /// The agent after its first sweep.
    pub fn swept(opts: RigOptions) -> AgentRig {
        let mut rig = AgentRig::new(opts);
        rig.sweep();
        rig
    }

    /// One sweep of every node; the cache holds its snapshot afterwards.
    pub fn sweep(&mut self) -> SweepStats {
        self.sweeper.sweep_once()
    }

    /// Moves simulated time on.
    pub fn advance(&self, d: Duration) {
        self.clock.advance(d);
    }

    /// One step of the sweeper's driver at the virtual time now (what is
    /// due: a sweep, a reopen, a save of the state file, a request for
    /// rediscovery); returns when the next is due.
    pub fn step(&mut self) -> std::time::Instant {
        self.sweeper.step(self.time.now())
    }

    /// [`Self::step`] and the time moved on to when the next step is due,
    /// as the sweeper's thread would wait; returns how long that was.
    pub fn step_and_wait(&mut self) -> Duration {
        let next = self.step();
        let wait = next.saturating_duration_since(self.time.now());
        self.time.advance_to(next);
        wait
    }

    /// A MIB view of the cache that accepts writes through the controller.
    pub fn view(&self) -> MibView {
        MibView::with_writes(Arc::clone(&self.cache), Arc::clone(&self.controller))
    }

    /// The fabric with the LIDs the simulator assigned.
    pub fn fabric(&self) -> Fabric {
        self.sim.fabric()
    }
}

/// The simulated PMAs driven only through encoded MADs on one simulator
/// transport, on a manual clock: the simulator's own tests.
pub struct PmaRig {
    pub sim: SimFabric,
    pub clock: ManualClock,
    pub tr: SimTransport,
    pub tid: u64,
}

impl PmaRig {
    /// The default fabric on a manual clock at time zero.
    pub fn new(seed: u64, traffic: bool) -> PmaRig {
        let clock = ManualClock::new();
        PmaRig::with_clock(seed, traffic, SimClock::Manual(clock.clone()), clock)
    }

    /// The default fabric on the real clock (the manual clock is unused).
    pub fn real_time(seed: u64) -> PmaRig {
        PmaRig::with_clock(seed, true, SimClock::Real, ManualClock::new())
    }

    fn with_clock(seed: u64, traffic: bool, c: SimClock, clock: ManualClock) -> PmaRig {
        let sim = SimFabric::new(
            topology::default_fabric(),
            SimOptions {
                seed,
                traffic,
                clock: c,
                ..Default::default()
            },
        );
        let tr = sim.transport();
        PmaRig {
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
        data: &PmData,
    ) -> Option<(u16, PmData)> {
        self.mad_mod(lid, meth, attr_id, 0, data)
    }

    /// One request/reply with an AttributeModifier through the transport;
    /// `None` when nothing answers. Checks that the reply matches the
    /// request (TID, method, attribute, source LID).
    pub fn mad_mod(
        &mut self,
        lid: u16,
        meth: u8,
        attr_id: u16,
        attr_mod: u32,
        data: &PmData,
    ) -> Option<(u16, PmData)> {
        self.tid += 1;
        let req = mad::request(meth, attr_id, attr_mod, self.tid, data);
        self.tr
            .send(&MadAddr::gsi(lid), &req)
            .expect("the simulator transport accepts every send");
        // The simulator answers at once; the wait only bounds a silence.
        let r = self
            .tr
            .recv(Duration::from_millis(50))
            .expect("the simulator transport does not fail")?;
        let (h, d) = mad::parse(&r.mad[..]).expect("the simulator answers well-formed MADs");
        assert_eq!(h.tid, self.tid);
        assert_eq!(h.method, method::GET_RESP);
        assert_eq!((h.attr_id, h.attr_mod), (attr_id, attr_mod));
        assert_eq!(r.from.lid, lid);
        Some((h.status, *d))
    }

    /// The status of one request that must be answered.
    pub fn status(&mut self, lid: u16, meth: u8, attr_id: u16, attr_mod: u32, d: &PmData) -> u16 {
        self.mad_mod(lid, meth, attr_id, attr_mod, d)
            .expect("an answer")
            .0
    }

    /// The data of one request that must succeed.
    pub fn ok(&mut self, lid: u16, meth: u8, attr_id: u16, data: &PmData) -> PmData {
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
            for p in n.ports.iter().filter(|p| p.remote().is_some()) {
                let (lid, _) = Self::addr(&n, p.num);
                v.push((n.clone(), p.num, lid));
            }
        }
        v
    }

    /// The first channel adapter with two ports.
    pub fn dual_port_ca(&self) -> Node {
        self.nodes()
            .into_iter()
            .find(|n| n.id.node_type == NodeType::Ca && n.id.num_ports == 2)
            .expect("the default fabric has dual-port CAs")
    }

    /// The first cabled port of a node of type `t`.
    pub fn first(&self, t: NodeType) -> (Node, u8, u16) {
        self.cabled()
            .into_iter()
            .find(|(n, _, _)| n.id.node_type == t)
            .unwrap_or_else(|| panic!("no cabled {t:?} in the fabric"))
    }
}

/// A noAuthNoPriv, reportable SNMPv3 message of `user` to `engine`
/// carrying `data`, as at boots 1, time 0.
pub fn plain_v3_message(
    engine: &[u8],
    user: &str,
    message_id: u32,
    data: rasn_snmp::v2::Pdus,
) -> Vec<u8> {
    use rasn::types::Integer;
    use rasn_snmp::v3::{HeaderData, Message, ScopedPdu, ScopedPduData, USMSecurityParameters};
    let sec = USMSecurityParameters {
        authoritative_engine_id: engine.to_vec().into(),
        authoritative_engine_boots: Integer::from(1),
        authoritative_engine_time: Integer::from(0),
        user_name: user.as_bytes().to_vec().into(),
        authentication_parameters: Vec::new().into(),
        privacy_parameters: Vec::new().into(),
    };
    let msg = Message {
        version: Integer::from(3),
        global_data: HeaderData {
            message_id: Integer::from(message_id),
            max_size: Integer::from(65507),
            flags: vec![0x04].into(),
            security_model: Integer::from(3),
        },
        security_parameters: rasn::ber::encode(&sec).expect("a message").into(),
        scoped_data: ScopedPduData::CleartextPdu(ScopedPdu {
            engine_id: engine.to_vec().into(),
            name: Vec::new().into(),
            data,
        }),
    };
    rasn::ber::encode(&msg).expect("a message")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The swept agent's cache holds what the PMAs hold at that simulated
    /// time, and moving the clock moves the PMAs but not the cache.
    #[test]
    fn the_swept_agent_caches_what_the_pmas_hold() {
        let rig = AgentRig::swept(RigOptions::default());
        let snap = rig.cache.load();
        let fabric = rig.fabric();
        assert_eq!(snap.nodes.len(), fabric.nodes.len());
        let n = fabric
            .nodes
            .iter()
            .find(|n| n.id.node_type == NodeType::Ca)
            .expect("the default fabric has CAs");
        let p = n.ports[0].num;
        let cached = snap.node(n.id.guid).unwrap().port(p).unwrap();
        let direct = port_counters(&rig.sim, n.pma_lid(p), p);
        assert_eq!(cached.counters(), Some(&direct));
        assert!(direct.xmit_data > 0);
        rig.advance(Duration::from_secs(60));
        let later = port_counters_extended(&rig.sim, n.pma_lid(p), p);
        let held = rig.state.lock().extended(n.id.guid, p).unwrap().xmit_data;
        assert!(later.xmit_data > held);
    }
}
