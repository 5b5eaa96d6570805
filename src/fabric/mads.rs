//! The PM MADs the sweeper, the write path and `query` send, built from
//! their attribute's declaration: a Get, and the PortCounters data area that
//! selects a port (and the counters a Set clears); an optional attribute's
//! is [`crate::pm::optional::request_data`].

use super::engine::MadRequest;
use crate::pm::PortCounters;
use crate::pm::mad::method;
use crate::transport::MadAddr;

/// A Get of `attr_id` with the given data area.
pub fn get(to: MadAddr, attr_id: u16, data: [u8; 192]) -> MadRequest {
    MadRequest {
        to,
        method: method::GET,
        attr_id,
        attr_mod: 0,
        data,
    }
}

/// The data area of a PortCounters request for `port` with these
/// CounterSelect bits (all zero for a Get).
pub fn port_counters_data(port: u8, counter_select: u16, counter_select2: u8) -> [u8; 192] {
    let mut data = [0u8; 192];
    PortCounters {
        port_select: port,
        counter_select,
        counter_select2,
        ..Default::default()
    }
    .encode(&mut data);
    data
}
