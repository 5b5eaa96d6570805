//! The local port's subnet and its master Subnet Manager, read by
//! directed-route SMPs (class 0x81; the umad transport registers no agent
//! for LID-routed SMPs): the local node's NodeInfo and the local port's
//! PortInfo (state, GID prefix, MasterSMLID), then SMInfo from the node of
//! the discovered fabric that has the MasterSMLID, along its directed
//! route. When no SM there answers as master (a standby SM took over and
//! the ports still name the old one, as opensm leaves them), every other
//! node the routes reach is asked in one window, and the first master in
//! the fabric's order is the subnet's.
//!
//! SMInfo carries the SM_Key: the replies are wiped once decoded, and only
//! [`SmInfo`] (no key) leaves this module.

use std::time::{Duration, Instant};

use zeroize::Zeroize;

use super::{
    ATTR_NODE_INFO, ATTR_PORT_INFO, CLASS_SMP_DIRECTED, DiscoverError, DiscoverOptions, Links,
    NoAnswer, NodeInfo, PortInfo, parse_smp_reply, routes_from, smp_addr,
};
use crate::fabric::engine::{DriveEnd, DriveOptions, Requester, drive};
use crate::fabric::window::{MAX_WINDOW, MadWindow, Transmit, WindowConfig, WindowEvent};
use crate::ib::subnet::{SmInfo, SmState};
use crate::ib::{Fabric, Guid, NodeType};
use crate::smp::{ATTR_SM_INFO, SMP_DATA_SIZE, SmInfoAttr, dr_smp_get};
use crate::transport::{MAD_SIZE, MadAddr, MadTransport, wire_tid};

/// What the local port says of its subnet, and its master SM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubnetRead {
    /// The local port's number and logical state (4: Active).
    pub port: u8,
    pub state: u8,
    /// The subnet prefix (PortInfo GidPrefix).
    pub prefix: u64,
    /// The master SM's LID as the local port has it (0: none).
    pub sm_lid: u16,
    /// The master SM (None: no SM answered as master).
    pub sm: Option<SmInfo>,
    /// The SMs that answered and are not master (standby, discovering).
    pub others: Vec<SmInfo>,
    /// SMPs sent for this read.
    pub smps: u64,
}

/// SMP Gets along directed routes, in one window; each answered (its
/// data, status 0) or not.
struct Batch {
    asks: Vec<(u16, u32, Vec<u8>)>,
    answers: Vec<Option<[u8; SMP_DATA_SIZE]>>,
}

impl Batch {
    fn new(asks: Vec<(u16, u32, Vec<u8>)>) -> Batch {
        Batch {
            answers: vec![None; asks.len()],
            asks,
        }
    }

    /// Send every ask; what answered is in `answers`. Returns the SMPs
    /// sent.
    fn run(
        &mut self,
        t: &mut dyn MadTransport,
        opts: &DiscoverOptions,
    ) -> Result<u64, DiscoverError> {
        let mut win = MadWindow::new(WindowConfig {
            window: opts.window.clamp(1, MAX_WINDOW),
            timeout: opts.timeout,
            retries: opts.retries,
        });
        for i in 0..self.asks.len() {
            win.push(i);
        }
        let drive_opts = DriveOptions {
            cancel: opts.cancel.as_deref(),
            class: Some(CLASS_SMP_DIRECTED),
        };
        let end = drive(t, &mut win, &drive_opts, self, &opts.clock);
        let sent = win.take_stats().sent;
        match end {
            DriveEnd::Cancelled => Err(DiscoverError::Cancelled),
            DriveEnd::Failed(e) => Err(DiscoverError::Transport(e)),
            DriveEnd::Idle | DriveEnd::Stopped => Ok(sent),
        }
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        // SMInfo answers hold the SM_Key.
        for a in self.answers.iter_mut().flatten() {
            a.zeroize();
        }
    }
}

impl Requester for Batch {
    fn build(&mut self, tx: Transmit) -> Option<(MadAddr, [u8; MAD_SIZE])> {
        let (attr, modifier, path) = self.asks.get(tx.index)?;
        Some((
            smp_addr(),
            dr_smp_get(*attr, *modifier, wire_tid(tx.tid), path),
        ))
    }

    fn on_event(&mut self, _win: &mut MadWindow, ev: WindowEvent) -> bool {
        if let WindowEvent::Reply { index, mut mad } = ev {
            if let Some(mut r) = parse_smp_reply(&mad) {
                if r.status == 0
                    && let Some(slot) = self.answers.get_mut(index)
                {
                    *slot = Some(r.data);
                }
                r.data.zeroize();
            }
            mad.zeroize();
        }
        true
    }
}

/// The SM an SMInfo answer describes (the key dropped), read at `lid`.
fn sm_of(data: &[u8; SMP_DATA_SIZE], lid: u16) -> SmInfo {
    let mut a = SmInfoAttr::decode(data);
    let sm = a.sm_info(lid);
    a.sm_key.wipe();
    sm
}

/// A subnet's topology as reading its SMs needs it: each node's GUID,
/// kind and LID, and each port's number, LID and far end. Kept between
/// reads in place of the discovered [`Fabric`], at about a quarter of its
/// size (no descriptions, port GUIDs, states or speeds).
#[derive(Clone, Debug, Default)]
pub struct SmMap {
    /// Ordered by GUID; a node's ports are `ports[start..start + len]`.
    nodes: Vec<MapNode>,
    ports: Vec<MapPort>,
}

#[derive(Clone, Copy, Debug)]
struct MapNode {
    guid: Guid,
    start: u32,
    lid: u16,
    len: u8,
    switch: bool,
}

#[derive(Clone, Copy, Debug)]
struct MapPort {
    /// The far end's place in [`SmMap::nodes`]; [`NO_PEER`]: not cabled
    /// or not known.
    peer: u32,
    lid: u16,
    num: u8,
}

const NO_PEER: u32 = u32::MAX;
const _: () = assert!(size_of::<MapNode>() == 16 && size_of::<MapPort>() == 8);

impl SmMap {
    /// The map of `fabric` (its nodes ordered by GUID, as discovery leaves
    /// them).
    pub fn of(fabric: &Fabric) -> SmMap {
        let mut m = SmMap::default();
        for n in &fabric.nodes {
            m.nodes.push(MapNode {
                guid: n.id.guid,
                start: m.ports.len() as u32,
                lid: n.id.lid,
                len: n.ports.len().min(usize::from(u8::MAX)) as u8,
                switch: n.id.node_type == NodeType::Switch,
            });
            for p in n.ports.iter().take(usize::from(u8::MAX)) {
                let peer = p.remote().and_then(|(g, _)| fabric.find(g));
                m.ports.push(MapPort {
                    peer: peer.map_or(NO_PEER, |i| i as u32),
                    lid: p.lid,
                    num: p.num,
                });
            }
        }
        m
    }

    fn ports_of(&self, i: usize) -> &[MapPort] {
        let n = &self.nodes[i];
        &self.ports[n.start as usize..][..usize::from(n.len)]
    }

    /// The LID node `i` is asked at: a switch's, or the channel adapter's
    /// port that has `sm_lid`, else its first.
    pub(super) fn lid_of(&self, i: usize, sm_lid: u16) -> u16 {
        let n = &self.nodes[i];
        if n.switch {
            return n.lid;
        }
        self.ports_of(i)
            .iter()
            .find(|p| sm_lid != 0 && p.lid == sm_lid)
            .map_or(n.lid, |p| p.lid)
    }
}

impl Links for SmMap {
    fn find(&self, guid: Guid) -> Option<usize> {
        self.nodes.binary_search_by_key(&guid, |n| n.guid).ok()
    }

    fn is_switch(&self, i: usize) -> bool {
        self.nodes[i].switch
    }

    fn node_count(&self) -> usize {
        self.nodes.len()
    }

    fn links(&self, i: usize) -> impl Iterator<Item = (u8, usize)> {
        self.ports_of(i)
            .iter()
            .filter(|p| p.peer != NO_PEER)
            .map(|p| (p.num, p.peer as usize))
    }
}

/// Which SMs [`read_subnet`] asks for SMInfo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmSearch {
    /// The node at the local port's MasterSMLID only: one SMP.
    AtMasterLid,
    /// That node, then, when it is no master, every node reached (the
    /// ports may name an old master for a while after a takeover): one SMP
    /// a node.
    EveryNode,
}

/// How often a subnet's probe may ask every node: when the SM at the
/// MasterSMLID is no master, at most once per `every`, so that a subnet
/// without an SM is not asked an SMP a node before each sweep. Pure: the
/// time is passed in.
#[derive(Clone, Debug)]
pub struct SearchPace {
    every: Duration,
    last: Option<Instant>,
}

impl SearchPace {
    pub fn new(every: Duration) -> SearchPace {
        SearchPace { every, last: None }
    }

    /// May every node be asked at `now`? Yes counts as asked.
    pub fn every_node(&mut self, now: Instant) -> bool {
        let due = self
            .last
            .is_none_or(|t| now.saturating_duration_since(t) >= self.every);
        if due {
            self.last = Some(now);
        }
        due
    }
}

/// Read the local port's subnet and its master SM through `t`, with
/// `known` (the map of the discovered fabric) for the directed routes to
/// the SMs.
pub fn read_subnet(
    t: &mut dyn MadTransport,
    known: &SmMap,
    opts: &DiscoverOptions,
    search: SmSearch,
) -> Result<SubnetRead, DiscoverError> {
    // PortInfo with modifier 0: the port the SMP arrived on (a channel
    // adapter's), port 0 of a switch.
    let mut local = Batch::new(vec![
        (ATTR_NODE_INFO, 0, Vec::new()),
        (ATTR_PORT_INFO, 0, Vec::new()),
    ]);
    let mut smps = local.run(t, opts)?;
    let (Some(ni), Some(pi)) = (local.answers[0], local.answers[1]) else {
        return Err(DiscoverError::NoAnswer(NoAnswer::NoReply));
    };
    let node = NodeInfo::decode(&ni);
    let port = PortInfo::decode(&pi);
    let mut read = SubnetRead {
        port: node.local_port,
        state: port.state,
        prefix: port.gid_prefix,
        sm_lid: port.master_sm_lid,
        sm: None,
        others: Vec::new(),
        smps: 0,
    };
    let routes = routes_from(known, Guid(node.node_guid), node.local_port, opts.max_hops);
    // The nodes to ask, each with the LID it is asked at: first the one
    // with the MasterSMLID, then (when that is no master) every other.
    let sm_lid = read.sm_lid;
    let (named, rest): (Vec<usize>, Vec<usize>) = (0..known.nodes.len())
        .filter(|&i| routes.reaches(i))
        .partition(|&i| sm_lid != 0 && known.lid_of(i, sm_lid) == sm_lid);
    let rest = match search {
        SmSearch::AtMasterLid => Vec::new(),
        SmSearch::EveryNode => rest,
    };
    for round in [named, rest] {
        if round.is_empty() {
            continue;
        }
        let mut b = Batch::new(
            round
                .iter()
                .map(|&i| (ATTR_SM_INFO, 0, routes.path(i).unwrap_or_default()))
                .collect(),
        );
        smps += b.run(t, opts)?;
        for (&i, answer) in round.iter().zip(&b.answers) {
            let Some(data) = answer else { continue };
            let sm = sm_of(data, known.lid_of(i, sm_lid));
            if sm.state == SmState::Master && read.sm.is_none() {
                read.sm = Some(sm);
            } else if !read.others.iter().any(|o| o.guid == sm.guid) {
                read.others.push(sm);
            }
        }
        if read.sm.is_some() {
            break;
        }
    }
    read.smps = smps;
    Ok(read)
}
