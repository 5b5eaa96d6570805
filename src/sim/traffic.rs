//! Deterministic traffic: per link direction, rates drawn from a seeded
//! splitmix64; counts at time t are `rate * t`, so they are computed lazily
//! and the two ends of a link always agree.

use crate::ib::{LinkSpeed, LinkWidth, link};
/// Counter indices into a [`Totals`] array.
pub mod q {
    pub const SYMBOL_ERRORS: usize = 0;
    pub const LINK_ERROR_RECOVERY: usize = 1;
    pub const LINK_DOWNED: usize = 2;
    pub const RCV_ERRORS: usize = 3;
    pub const RCV_REMOTE_PHYS_ERRORS: usize = 4;
    pub const RCV_SWITCH_RELAY_ERRORS: usize = 5;
    pub const XMIT_DISCARDS: usize = 6;
    pub const XMIT_CONSTRAINT_ERRORS: usize = 7;
    pub const RCV_CONSTRAINT_ERRORS: usize = 8;
    pub const LOCAL_LINK_INTEGRITY_ERRORS: usize = 9;
    pub const EXCESSIVE_BUFFER_OVERRUN_ERRORS: usize = 10;
    pub const QP1_DROPPED: usize = 11;
    pub const VL15_DROPPED: usize = 12;
    pub const XMIT_DATA: usize = 13;
    pub const RCV_DATA: usize = 14;
    pub const XMIT_PKTS: usize = 15;
    pub const RCV_PKTS: usize = 16;
    pub const XMIT_WAIT: usize = 17;
    pub const UNICAST_XMIT_PKTS: usize = 18;
    pub const UNICAST_RCV_PKTS: usize = 19;
    pub const MULTICAST_XMIT_PKTS: usize = 20;
    pub const MULTICAST_RCV_PKTS: usize = 21;
    /// Packets received with FECN set (the far end's transmitter was
    /// congested and marked them).
    pub const RCV_FECN: usize = 22;
    /// Packets received with BECN set (answers to the FECN-marked packets
    /// this port sent).
    pub const RCV_BECN: usize = 23;
    /// Ticks the transmitter spent in congestion.
    pub const XMIT_TIME_CONG: usize = 24;
    pub const COUNT: usize = 25;
}

/// Running totals of one port since the simulation started.
pub type Totals = [u64; q::COUNT];

/// splitmix64 step.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Rates of one direction of a link (from the transmitting port), in
/// millionths of an event per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Direction {
    pub pkts_micro: u64,
    /// Payload of each packet in 4-octet words.
    pub dwords_per_pkt: u64,
    /// One packet in `mcast_every` is multicast (0 = none).
    pub mcast_every: u64,
    /// XmitWait ticks (transmitter), 0 unless the direction is congested.
    pub xmit_wait_micro: u64,
    /// Errors seen by the receiving port.
    pub symbol_micro: u64,
    pub rcv_err_micro: u64,
    pub link_recovery_micro: u64,
    /// Discards at the transmitter (congested directions only).
    pub discard_micro: u64,
}

impl Direction {
    pub fn congested(&self) -> bool {
        self.xmit_wait_micro > 0
    }

    fn count(rate_micro: u64, t_ns: u64) -> u64 {
        let v = u128::from(rate_micro) * u128::from(t_ns) / 1_000_000_000_000_000u128;
        u64::try_from(v).unwrap_or(u64::MAX)
    }

    pub fn pkts(&self, t_ns: u64) -> u64 {
        Self::count(self.pkts_micro, t_ns)
    }
}

/// Draws the rates of one direction of a link of the given width/speed,
/// whose transmitter counts `wait_ticks_per_s` XmitWait ticks in a
/// second of waiting (the node's rule,
/// [`crate::ib::xmit_wait::TickRule`]; 4 ns ticks when not known).
pub fn draw(
    rng: &mut u64,
    width: Option<LinkWidth>,
    speed: Option<LinkSpeed>,
    wait_ticks_per_s: Option<f64>,
) -> Direction {
    let mbps = link::rate_mbps(
        Some(width.unwrap_or(LinkWidth::X4)),
        Some(speed.unwrap_or(LinkSpeed::Sdr)),
    )
    .unwrap_or(0);
    let bytes_per_s = mbps * 1_000_000 / 8;
    // Utilisation in millionths: idle (15%), moderate (55%), busy (30%).
    let class = splitmix64(rng) % 100;
    let util_ppm = match class {
        0..15 => 100 + splitmix64(rng) % 900,
        15..70 => 10_000 + splitmix64(rng) % 190_000,
        _ => 200_000 + splitmix64(rng) % 600_000,
    };
    let dwords_per_pkt = 16 + splitmix64(rng) % 1009;
    let bytes_micro = u128::from(bytes_per_s) * u128::from(util_ppm);
    let pkts_micro = (bytes_micro / u128::from(dwords_per_pkt * 4)) as u64;
    let mcast_every = 20 + splitmix64(rng) % 200;
    let congested = splitmix64(rng).is_multiple_of(4) && class >= 15;
    let xmit_wait_micro = if congested {
        // Waiting 0.4% to 20% of the time.
        let share = (1_000_000 + splitmix64(rng) % 49_000_000) as f64 * 4e-9;
        (share * wait_ticks_per_s.unwrap_or(250e6) * 1e6) as u64
    } else {
        0
    };
    let noisy = splitmix64(rng).is_multiple_of(6);
    let per_hour = |n: u64| n * 1_000_000 / 3600;
    let (symbol_micro, rcv_err_micro, link_recovery_micro) = if noisy {
        let sym = 1 + splitmix64(rng) % 30;
        (
            per_hour(sym * 60),
            per_hour(sym * 15),
            per_hour(1 + splitmix64(rng) % 3),
        )
    } else {
        (0, 0, 0)
    };
    let discard_micro = if congested {
        per_hour(splitmix64(rng) % 40)
    } else {
        0
    };
    Direction {
        pkts_micro,
        dwords_per_pkt,
        mcast_every,
        xmit_wait_micro,
        symbol_micro,
        rcv_err_micro,
        link_recovery_micro,
        discard_micro,
    }
}

fn add(t: &mut u64, v: u64) {
    *t = t.saturating_add(v);
}

/// Adds what `tx` (this port transmitting) and `rx` (the far end
/// transmitting to this port) did during `t_ns` to `totals`.
pub fn accumulate(totals: &mut Totals, tx: &Direction, rx: &Direction, t_ns: u64) {
    let c = Direction::count;
    let xp = tx.pkts(t_ns);
    let rp = rx.pkts(t_ns);
    let xm = xp.checked_div(tx.mcast_every).unwrap_or(0);
    let rm = rp.checked_div(rx.mcast_every).unwrap_or(0);
    add(&mut totals[q::XMIT_PKTS], xp);
    add(&mut totals[q::RCV_PKTS], rp);
    add(
        &mut totals[q::XMIT_DATA],
        xp.saturating_mul(tx.dwords_per_pkt),
    );
    add(
        &mut totals[q::RCV_DATA],
        rp.saturating_mul(rx.dwords_per_pkt),
    );
    add(&mut totals[q::MULTICAST_XMIT_PKTS], xm);
    add(&mut totals[q::MULTICAST_RCV_PKTS], rm);
    add(&mut totals[q::UNICAST_XMIT_PKTS], xp - xm);
    add(&mut totals[q::UNICAST_RCV_PKTS], rp - rm);
    add(&mut totals[q::XMIT_WAIT], c(tx.xmit_wait_micro, t_ns));
    add(&mut totals[q::XMIT_DISCARDS], c(tx.discard_micro, t_ns));
    add(&mut totals[q::SYMBOL_ERRORS], c(rx.symbol_micro, t_ns));
    add(&mut totals[q::RCV_ERRORS], c(rx.rcv_err_micro, t_ns));
    add(
        &mut totals[q::LINK_ERROR_RECOVERY],
        c(rx.link_recovery_micro, t_ns),
    );
    // A congested transmitter marks one packet in FECN_EVERY with FECN;
    // the receiver of a marked packet returns one BECN for every two.
    if rx.congested() {
        add(&mut totals[q::RCV_FECN], rp / FECN_EVERY);
    }
    if tx.congested() {
        add(&mut totals[q::RCV_BECN], xp / FECN_EVERY / 2);
    }
    add(
        &mut totals[q::XMIT_TIME_CONG],
        c(tx.xmit_wait_micro, t_ns) / 2,
    );
}

/// One packet in this many sent by a congested transmitter is FECN-marked.
pub const FECN_EVERY: u64 = 32;
