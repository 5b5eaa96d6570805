//! PortCounters (attribute 0x0012): the mandatory 32/16/8/4-bit counters.

use super::layout::Field;

pm_attr! {
    pub struct PortCounters per port, fields PortCountersField, table FIELDS {
        SymbolErrors symbol_errors: u16 = "SymbolErrorCounter" @ 32:16, clear cs 0;
        LinkErrorRecovery link_error_recovery: u8 = "LinkErrorRecoveryCounter" @ 48:8, clear cs 1;
        LinkDowned link_downed: u8 = "LinkDownedCounter" @ 56:8, clear cs 2;
        RcvErrors rcv_errors: u16 = "PortRcvErrors" @ 64:16, clear cs 3;
        RcvRemotePhysErrors rcv_remote_phys_errors: u16 = "PortRcvRemotePhysicalErrors" @ 80:16, clear cs 4;
        RcvSwitchRelayErrors rcv_switch_relay_errors: u16 = "PortRcvSwitchRelayErrors" @ 96:16, clear cs 5;
        XmitDiscards xmit_discards: u16 = "PortXmitDiscards" @ 112:16, clear cs 6;
        XmitConstraintErrors xmit_constraint_errors: u8 = "PortXmitConstraintErrors" @ 128:8, clear cs 7;
        RcvConstraintErrors rcv_constraint_errors: u8 = "PortRcvConstraintErrors" @ 136:8, clear cs 8;
        CounterSelect2 counter_select2: u8 = "CounterSelect2" @ 144:8;
        /// 4 bits.
        LocalLinkIntegrityErrors local_link_integrity_errors: u8 = "LocalLinkIntegrityErrors" @ 152:4, clear cs 9;
        /// 4 bits.
        ExcessiveBufferOverrunErrors excessive_buffer_overrun_errors: u8 = "ExcessiveBufferOverrunErrors" @ 156:4, clear cs 10;
        Qp1Dropped qp1_dropped: u16 = "QP1Dropped" @ 160:16;
        Vl15Dropped vl15_dropped: u16 = "VL15Dropped" @ 176:16, clear cs 11;
        /// Octets divided by 4.
        XmitData xmit_data: u32 = "PortXmitData" @ 192:32, clear cs 12;
        /// Octets divided by 4.
        RcvData rcv_data: u32 = "PortRcvData" @ 224:32, clear cs 13;
        XmitPkts xmit_pkts: u32 = "PortXmitPkts" @ 256:32, clear cs 14;
        RcvPkts rcv_pkts: u32 = "PortRcvPkts" @ 288:32, clear cs 15;
        XmitWait xmit_wait: u32 = "PortXmitWait" @ 320:32, clear cs2 0;
    }
}

use PortCountersField as F;

/// PortSelect value that means "all ports" (when AllPortSelect is supported).
pub const ALL_PORTS: u8 = 0xFF;

/// The CounterSelect mask that clears `f` (0 when CounterSelect2 does).
pub const fn cs(f: PortCountersField) -> u16 {
    match f.clear() {
        Some(c) => c.select() as u16,
        None => 0,
    }
}

/// The CounterSelect2 mask that clears `f` (0 when CounterSelect does).
pub const fn cs2(f: PortCountersField) -> u8 {
    match f.clear() {
        Some(c) => c.select2() as u8,
        None => 0,
    }
}

/// CounterSelect bits: a Set clears the selected counters.
pub const CS_XMIT_DATA: u16 = cs(F::XmitData);
pub const CS_RCV_DATA: u16 = cs(F::RcvData);
pub const CS_XMIT_PKTS: u16 = cs(F::XmitPkts);
pub const CS_RCV_PKTS: u16 = cs(F::RcvPkts);
/// CounterSelect2 bit: clear PortXmitWait.
pub const CS2_XMIT_WAIT: u8 = cs2(F::XmitWait);

/// One PortCounters counter (a field a Set can clear): its field, its
/// CounterSelect/CounterSelect2 bit and its width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterDef {
    pub counter: PortCountersField,
    pub field: Field,
    /// CounterSelect bit (0 for a counter cleared by CounterSelect2).
    pub select: u16,
    /// CounterSelect2 bit.
    pub select2: u8,
}

impl CounterDef {
    const fn of(counter: PortCountersField) -> CounterDef {
        CounterDef {
            counter,
            field: counter.field(),
            select: cs(counter),
            select2: cs2(counter),
        }
    }

    /// The IBA name of the counter.
    pub const fn name(&self) -> &'static str {
        self.field.name
    }

    /// The counter's maximum: it saturates at all ones of its field width.
    pub const fn max(&self) -> u32 {
        self.field.max() as u32
    }

    /// The counter's value in a reading.
    pub fn get(&self, pc: &PortCounters) -> u32 {
        pc.get(self.counter) as u32
    }
}

/// Number of counters: the fields with a clear bit.
pub const NUM_COUNTERS: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < F::ALL.len() {
        if F::ALL[i].clear().is_some() {
            n += 1;
        }
        i += 1;
    }
    n
};

/// Every PortCounters counter, in wire order (which is IB-PM-MIB's column
/// order); 64-bit totals and cache slots are indexed like it.
pub const COUNTERS: [CounterDef; NUM_COUNTERS] = {
    let mut out = [CounterDef::of(F::XmitWait); NUM_COUNTERS];
    let (mut i, mut k) = (0, 0);
    while i < F::ALL.len() {
        if F::ALL[i].clear().is_some() {
            out[k] = CounterDef::of(F::ALL[i]);
            k += 1;
        }
        i += 1;
    }
    out
};

/// The slot of `f` in [`COUNTERS`] (and in 64-bit totals).
pub fn slot(f: PortCountersField) -> Option<usize> {
    COUNTERS.iter().position(|c| c.counter == f)
}

const _: () = {
    // Every counter fits the 32-bit Gauge32 it is served as.
    let mut i = 0;
    while i < NUM_COUNTERS {
        assert!(COUNTERS[i].field.width <= 32);
        i += 1;
    }
};

impl PortCounters {
    /// A Get/Set request body selecting `port` (and, for a Set, the counters
    /// to clear).
    pub fn select(port: u8, counter_select: u16, counter_select2: u8) -> Self {
        PortCounters {
            port_select: port,
            counter_select,
            counter_select2,
            ..Default::default()
        }
    }
}
