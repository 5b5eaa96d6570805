//! Shared pieces of the fuzz targets: a byte cursor over the fuzz input, a
//! MIB view over a swept simulated fabric, and a MAD transport whose
//! answers come from the fuzz input.

use std::collections::VecDeque;
use std::time::Duration;

use ibpm_agentx::mib::view::MibView;
use ibpm_agentx::rig::{AgentRig, RigOptions};
use ibpm_agentx::sim::SimFabric;
use ibpm_agentx::transport::{Fault, MAD_SIZE, MadAddr, MadTransport, Received};

/// Reads fixed-size pieces off the fuzz input; past its end every read
/// yields zeros and [`Bytes::is_empty`] turns true.
pub struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.u8(), self.u8()])
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    pub fn u64(&mut self) -> u64 {
        (u64::from(self.u32()) << 32) | u64::from(self.u32())
    }
    pub fn take(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
}

/// A MIB view with writes over the default simulated fabric after one
/// sweep, and the simulation itself (per thread, built once).
pub struct SimView {
    pub view: MibView,
    pub sim: SimFabric,
}

fn build_sim_view() -> SimView {
    let rig = AgentRig::swept(RigOptions {
        seed: 3,
        ..RigOptions::default()
    });
    SimView {
        view: rig.view(),
        sim: rig.sim,
    }
}

thread_local! {
    static SIM_VIEW: SimView = build_sim_view();
}

/// Runs `f` on this thread's [`SimView`].
pub fn with_sim_view<R>(f: impl FnOnce(&SimView) -> R) -> R {
    SIM_VIEW.with(f)
}

/// Answers each MAD sent with a reply built by `answer` from the request
/// and the next bytes of the fuzz input; once the input is used up, sends
/// are dropped (the caller sees timeouts).
pub struct FuzzTransport {
    input: Vec<u8>,
    pos: usize,
    queue: VecDeque<Received>,
    answer: Answer,
}

/// Builds the reply (umad status, MAD) to a request from fuzz bytes; `None`:
/// no reply.
pub type Answer = fn(&[u8; MAD_SIZE], &mut Bytes) -> Option<(i32, [u8; MAD_SIZE])>;

impl FuzzTransport {
    pub fn new(input: &[u8], answer: Answer) -> Self {
        FuzzTransport {
            input: input.to_vec(),
            pos: 0,
            queue: VecDeque::new(),
            answer,
        }
    }
}

impl MadTransport for FuzzTransport {
    fn send(&mut self, to: &MadAddr, mad: &[u8; MAD_SIZE]) -> Result<(), Fault> {
        if self.pos >= self.input.len() {
            return Ok(());
        }
        let mut b = Bytes(&self.input[self.pos..]);
        let reply = (self.answer)(mad, &mut b);
        self.pos = self.input.len() - b.0.len();
        if let Some((status, mad)) = reply {
            self.queue.push_back(Received {
                from: *to,
                status,
                mad: Box::new(mad),
            });
        }
        Ok(())
    }

    fn recv(&mut self, _timeout: Duration) -> Result<Option<Received>, Fault> {
        Ok(self.queue.pop_front())
    }
}
