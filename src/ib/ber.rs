//! Bit error rates: errors over the bits a port received in an interval,
//! with the arithmetic in one place ([`ber`]).
//!
//! - Definition: "the number of bit errors per unit time divided by the
//!   total number of transferred bits during a studied time interval"
//!   (NVIDIA ibdiagnet user manual, "Bit Error Rate (BER)"); UFM's PDR
//!   plugin computes it as error bits over link rate x time.
//! - The bits received are the link's data rate (width x the lane's data
//!   rate after encoding, pmPortRateMbps) times the interval.
//! - Symbol BER: SymbolErrorCounter's increase, one bit per symbol error
//!   (a lower bound). On HDR and NDR links symbol errors are what is left
//!   after FEC (ibdiagnet: "symbol errors (NDR/HDR) or effective errors
//!   (EDR) are the actual errors seen by the application level after error
//!   correction").
//! - Raw BER (before FEC): PortExtendedSpeedsCounters' corrected FEC
//!   symbols; effective BER (after FEC): its uncorrectable FEC blocks; each
//!   at least one bit in error.
//! - Representation: SMIv2 has no floating point, so a BER is shown as
//!   errors per 10^15 bits (an Unsigned32 an NMS can threshold and plot:
//!   10^-12 is 1000, 10^-15 is 1, saturating at 4294967295, about 4.3E-6)
//!   and as text in scientific notation (`1.2E-12`).

use super::link::{LinkSpeed, LinkWidth, rate_mbps};

/// A bit error rate: errors per bit.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Ber(pub f64);

/// The usual symbol BER threshold: 10^-12 (ibdiagnet's `--ber_test`
/// default; IBTA's link BER objective).
pub const SYMBOL_BER_THRESHOLD: Ber = Ber(1e-12);
/// The effective (post-FEC) BER threshold: 10^-14, the symbol error rate
/// UFM's PDR plugin isolates a link at over its 12-minute window
/// (`LinkBW * 1e9 * 12 * 60 * 1e-14` errors; symbol errors are post-FEC
/// on HDR and NDR links).
pub const EFFECTIVE_BER_THRESHOLD: Ber = Ber(1e-14);

/// Errors per this many bits in [`Ber::per_1e15`].
pub const SCALE: f64 = 1e15;

/// `errors` (an increase, one bit each) over what a link at `width` and
/// `speed` received in `secs`. None when the link's rate is not known or
/// the interval is empty.
pub fn ber(
    errors: f64,
    secs: f64,
    width: Option<LinkWidth>,
    speed: Option<LinkSpeed>,
) -> Option<Ber> {
    let bits = rate_mbps(width, speed)? as f64 * 1e6 * secs;
    (bits > 0.0 && errors >= 0.0 && errors.is_finite()).then(|| Ber(errors / bits))
}

impl Ber {
    /// Errors per 10^15 bits, rounded, saturating at `u32::MAX`.
    pub fn per_1e15(self) -> u32 {
        let v = (self.0 * SCALE).round();
        if v >= f64::from(u32::MAX) {
            u32::MAX
        } else if v > 0.0 {
            v as u32
        } else {
            0
        }
    }

    /// From errors per 10^15 bits (a threshold as configured).
    pub fn from_per_1e15(v: u64) -> Ber {
        Ber(v as f64 / SCALE)
    }

    /// Scientific notation with two significant digits (`1.2E-12`);
    /// `0` when no error was seen.
    pub fn scientific(self) -> String {
        if self.0 <= 0.0 {
            return "0".to_string();
        }
        format!("{:.1E}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LinkSpeed as S;
    use LinkWidth as W;

    /// Increases, widths, speeds and intervals against hand-computed
    /// BERs.
    #[test]
    fn ber_by_hand() {
        // (errors, seconds, width, speed, BER, per 1e15, text)
        let table = [
            // 4x NDR = 400 Gb/s; 60 s = 2.4e13 bits; 24 errors = 1e-12.
            (24.0, 60.0, W::X4, S::Ndr, 1e-12, 1000, "1.0E-12"),
            // 2x NDR = 200 Gb/s; 10 s = 2e12 bits; 1 error = 5e-13.
            (1.0, 10.0, W::X2, S::Ndr, 5e-13, 500, "5.0E-13"),
            // 4x QDR = 32 Gb/s; 10 s = 3.2e11 bits; 100 errors = 3.125e-10.
            (100.0, 10.0, W::X4, S::Qdr, 3.125e-10, 312_500, "3.1E-10"),
            // 1x SDR = 2 Gb/s; 1 s; 65535 errors = 3.27675e-5: saturates.
            (65535.0, 1.0, W::X1, S::Sdr, 3.27675e-5, u32::MAX, "3.3E-5"),
            // 4x XDR = 800 Gb/s; 300 s = 2.4e14 bits; 1 error = 4.17e-15.
            (1.0, 300.0, W::X4, S::Xdr, 1.0 / 2.4e14, 4, "4.2E-15"),
            // 4x EDR = 100 Gb/s; 125 min = 7.5e14 bits; 3 errors = 4e-15.
            (3.0, 7500.0, W::X4, S::Edr, 4e-15, 4, "4.0E-15"),
            // 4x FDR = 54.56 Gb/s; 1 s; 0 errors.
            (0.0, 1.0, W::X4, S::Fdr, 0.0, 0, "0"),
        ];
        for (errors, secs, w, s, want, scaled, text) in table {
            let b = ber(errors, secs, Some(w), Some(s)).unwrap();
            assert!(
                (b.0 - want).abs() <= want * 1e-9,
                "{w}{s}: {} != {want}",
                b.0
            );
            assert_eq!(b.per_1e15(), scaled, "{w}{s}");
            assert_eq!(b.scientific(), text, "{w}{s}");
        }
        assert_eq!(ber(1.0, 1.0, None, Some(S::Ndr)), None);
        assert_eq!(ber(1.0, 0.0, Some(W::X4), Some(S::Ndr)), None);
        assert_eq!(ber(f64::NAN, 1.0, Some(W::X4), Some(S::Ndr)), None);
        assert_eq!(SYMBOL_BER_THRESHOLD.per_1e15(), 1000);
        assert_eq!(EFFECTIVE_BER_THRESHOLD.per_1e15(), 10);
        assert_eq!(Ber::from_per_1e15(1000), SYMBOL_BER_THRESHOLD);
    }
}
