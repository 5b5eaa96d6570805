//! The rate arithmetic pmPortRateTable shows and the notifications test:
//! shares of a link's capacity and of the time a port waited to transmit.

/// A share of `capacity` in hundredths of a percent, at most 100%.
fn hundredths(part: f64, capacity: f64) -> u32 {
    if capacity <= 0.0 {
        return 0;
    }
    ((part / capacity * 10_000.0).round() as u32).min(10_000)
}

/// UFM's normalized XmitData: `octets_per_s` as a share of a link of
/// `rate_mbps`, in hundredths of a percent (pmPortRateOutUtilization).
pub fn utilization_hundredths(octets_per_s: f64, rate_mbps: u64) -> u32 {
    hundredths(octets_per_s * 8.0, rate_mbps as f64 * 1e6)
}

/// The share of the time a port waited to transmit (0..=1, from
/// [`crate::fabric::record::PortRecord::congestion`], whose ticks follow
/// the node's [`crate::ib::xmit_wait::TickRule`]) in hundredths of a
/// percent (pmPortRateCongestion).
pub fn congestion_hundredths(share: f64) -> u32 {
    hundredths(share, 1.0)
}
