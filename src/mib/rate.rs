//! The rate arithmetic pmPortRateTable shows and the notifications test:
//! shares of a link's capacity and of the time a port waited to transmit.

/// A share of `capacity` in hundredths of a percent, at most 100%.
fn hundredths(part: f64, capacity: f64) -> u32 {
    if capacity <= 0.0 {
        return 0;
    }
    ((part / capacity * 10_000.0).round() as u32).min(10_000)
}

/// PortXmitWait ticks per second that mean "waiting all the time": the
/// tick is taken as one link transfer period of a 4x lane group (4 ns),
/// as the UFM congested-bandwidth figure assumes a fixed tick.
pub const XMIT_WAIT_TICKS_PER_SEC: f64 = 250_000_000.0;

/// UFM's normalized XmitData: `octets_per_s` as a share of a link of
/// `rate_mbps`, in hundredths of a percent (pmPortRateOutUtilization).
pub fn utilization_hundredths(octets_per_s: f64, rate_mbps: u64) -> u32 {
    hundredths(octets_per_s * 8.0, rate_mbps as f64 * 1e6)
}

/// The share of the time a port waited to transmit, from its XmitWait
/// ticks per second, in hundredths of a percent (pmPortRateCongestion).
pub fn congestion_hundredths(xmit_wait_per_s: f64) -> u32 {
    hundredths(congestion_share(xmit_wait_per_s), 1.0)
}

pub fn congestion_share(xmit_wait_per_s: f64) -> f64 {
    (xmit_wait_per_s / XMIT_WAIT_TICKS_PER_SEC).min(1.0)
}
