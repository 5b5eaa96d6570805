//! The DOCA telemetry diag data IDs the agent samples and the 64-bit
//! counter ([`hc::HC`] slot) each feeds: one table, read by the DOCA
//! backend (`crate::doca`) and by the sweeper's state, which folds the
//! values into the port's totals.

use super::hc;

/// One DOCA data ID family the agent samples per local port, and the
/// pmPortCounters64Table counter ([`hc::HC`] slot) it feeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataId {
    /// The name in the DOCA Telemetry Diag guide's list of data IDs.
    pub name: &'static str,
    /// The ID with the local port byte (bits 0..8) zero.
    pub base: u64,
    /// The [`hc::HC`] slot it feeds. DOCA counts bytes and packets (not
    /// IBA 4-octet words): the value goes into the total as it is.
    pub slot: usize,
}

impl DataId {
    /// The data ID for local port `port`.
    pub fn for_port(&self, port: u8) -> u64 {
        self.base | u64::from(port)
    }
}

/// Every data ID the agent samples for each local port, in the order it
/// applies them.
pub const DATA_IDS: [DataId; 5] = [
    DataId {
        name: "port_tx_bytes",
        base: 0x1140_0001_0000_0000,
        slot: hc::OUT_OCTETS,
    },
    DataId {
        name: "port_rx_bytes",
        base: 0x1020_0001_0000_0000,
        slot: hc::IN_OCTETS,
    },
    DataId {
        name: "port_tx_packets",
        base: 0x1140_0003_0000_0000,
        slot: hc::OUT_PKTS,
    },
    DataId {
        name: "port_rx_packets",
        base: 0x1020_0003_0000_0000,
        slot: hc::IN_PKTS,
    },
    DataId {
        name: "port_rx_discard_buf_packets",
        base: 0x1020_0005_0000_0000,
        slot: hc::IN_DISCARDS,
    },
];

/// The [`hc::HC`] slots a DOCA-served port takes from DOCA (bit k: slot
/// k); every other slot of such a port comes from PM MADs, or stays
/// empty with the doca backend alone.
pub const DOCA_SLOTS: u32 = {
    let mut m = 0u32;
    let mut i = 0;
    while i < DATA_IDS.len() {
        m |= 1 << DATA_IDS[i].slot;
        i += 1;
    }
    m
};

/// What a data ID is: the table entry and local port it was made from.
pub fn lookup(id: u64) -> Option<(&'static DataId, u8)> {
    let port = (id & 0xFF) as u8;
    DATA_IDS
        .iter()
        .find(|d| d.base == id & !0xFF)
        .map(|d| (d, port))
}

/// The name of a data ID for messages (`port_rx_bytes[1]`), or its hex.
pub fn describe(id: u64) -> String {
    match lookup(id) {
        Some((d, port)) => format!("{}[port {port}] ({id:#018x})", d.name),
        None => format!("{id:#018x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_ids_are_the_guides() {
        // From the guide's appendix: port_rx_bytes 0x10200001000000XX,
        // port_rx_packets 0x10200003000000XX, port_rx_discard_buf_packets
        // 0x10200005000000XX, port_tx_bytes 0x11400001000000XX,
        // port_tx_packets 0x11400003000000XX.
        let id = |n: &str| DATA_IDS.iter().find(|d| d.name == n).unwrap().for_port(1);
        assert_eq!(id("port_rx_bytes"), 0x1020_0001_0000_0001);
        assert_eq!(id("port_rx_packets"), 0x1020_0003_0000_0001);
        assert_eq!(id("port_rx_discard_buf_packets"), 0x1020_0005_0000_0001);
        assert_eq!(id("port_tx_bytes"), 0x1140_0001_0000_0001);
        assert_eq!(id("port_tx_packets"), 0x1140_0003_0000_0001);
        assert_eq!(
            lookup(0x1020_0001_0000_0002).map(|(d, p)| (d.slot, p)),
            Some((hc::IN_OCTETS, 2))
        );
        assert_eq!(
            lookup(0x1020_0002_0000_0101),
            None,
            "a per-priority ID is not ours"
        );
        assert_eq!(DOCA_SLOTS.count_ones() as usize, DATA_IDS.len());
    }
}
