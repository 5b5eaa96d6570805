//! Sample buffers of DOCA telemetry diag, decoded in pure Rust.
//!
//! `doca_telemetry_diag_query_counters` fills a caller's buffer with
//! `n_valid` samples of `sample_size` bytes each (`sample_size` from
//! `doca_telemetry_diag_get_sample_size`). A sample's layout depends on
//! the output format the context was configured with:
//!
//! | format | header (16 or 8 bytes)                                     | then, per applied data ID         |
//! |--------|------------------------------------------------------------|-----------------------------------|
//! | 0      | u32 sample_id, u32 reserved                                 | u64 data_id, u32 ts_h, u32 ts_l, u64 value |
//! | 1      | u32 sample_id, u32 earliest_ts_h, u32 earliest_ts_l, u32 latest_ts_l | u64 value               |
//! | 2      | same as 1                                                  | u32 value                         |
//!
//! Values come in the order the data IDs were applied. The guide does not
//! state a byte order; the device writes through the host's library, so
//! host order is assumed (little-endian on every platform DOCA ships for).
//! Timestamps: FRC (free-running counter) is `(h << 32) | l` nanoseconds;
//! RTC is `h` seconds plus `l` nanoseconds.

use std::fmt;

wire_enum! {
    /// `enum doca_telemetry_diag_output_format`.
    pub enum OutputFormat: u8, from_code {
        /// Data ID, timestamp and 64-bit value per entry.
        IdValue64 = 0,
        /// 64-bit values; timestamps per sample.
        Values64 = 1,
        /// 32-bit values; timestamps per sample.
        Values32 = 2,
    }
}

impl OutputFormat {
    fn header(self) -> usize {
        match self {
            OutputFormat::IdValue64 => 8,
            OutputFormat::Values64 | OutputFormat::Values32 => 16,
        }
    }

    fn entry(self) -> usize {
        match self {
            OutputFormat::IdValue64 => 24,
            OutputFormat::Values64 => 8,
            OutputFormat::Values32 => 4,
        }
    }

    /// Bits of a value: a 32-bit value wraps far sooner than a 64-bit one.
    pub fn value_bits(self) -> u32 {
        match self {
            OutputFormat::Values32 => 32,
            _ => 64,
        }
    }

    /// The smallest sample that holds `ids` data IDs.
    pub fn sample_size(self, ids: usize) -> usize {
        self.header()
            .saturating_add(ids.saturating_mul(self.entry()))
    }
}

/// `enum doca_telemetry_diag_timestamp_source`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimestampSource {
    /// The free-running counter: `(h << 32) | l` nanoseconds.
    Frc = 0,
    /// The real-time clock: `h` seconds, `l` nanoseconds.
    Rtc = 1,
}

impl TimestampSource {
    /// Nanoseconds of a (high, low) timestamp pair.
    pub fn nanos(self, h: u32, l: u32) -> u64 {
        match self {
            TimestampSource::Frc => (u64::from(h) << 32) | u64::from(l),
            TimestampSource::Rtc => u64::from(h)
                .saturating_mul(1_000_000_000)
                .saturating_add(u64::from(l)),
        }
    }

    /// The latest timestamp of a sample, of which only the low word is
    /// given: its high word is the earliest's, plus one when the low word
    /// went round (FRC) or passed a second (RTC) in between.
    fn latest(self, h: u32, earliest_l: u32, latest_l: u32) -> u64 {
        let h = if latest_l < earliest_l {
            h.wrapping_add(1)
        } else {
            h
        };
        self.nanos(h, latest_l)
    }
}

/// One decoded sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// The device's sequence number of the sample.
    pub sample_id: u32,
    /// The earliest timestamp in the sample, in nanoseconds.
    pub earliest_ns: u64,
    /// The latest timestamp in the sample, in nanoseconds.
    pub latest_ns: u64,
    /// One value per applied data ID, in the applied order.
    pub values: Vec<u64>,
}

/// Why a buffer could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The library's sample size is smaller than the format needs for the
    /// applied data IDs.
    SampleTooSmall { sample_size: usize, need: usize },
    /// The library says more samples are valid than the buffer holds.
    BufferShort { samples: u32, have: usize },
    /// A format-0 entry names another data ID than the one applied at its
    /// place.
    WrongDataId {
        sample: u32,
        index: usize,
        expected: u64,
        found: u64,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::SampleTooSmall { sample_size, need } => write!(
                f,
                "sample size {sample_size} bytes is less than the {need} the applied data IDs need"
            ),
            DecodeError::BufferShort { samples, have } => write!(
                f,
                "{samples} samples reported valid but the buffer holds {have}"
            ),
            DecodeError::WrongDataId {
                sample,
                index,
                expected,
                found,
            } => write!(
                f,
                "sample {sample}: entry {index} is data ID {found:#018x}, applied {expected:#018x}"
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

/// How to read a context's samples: its output format, timestamp source,
/// the data IDs applied (in order) and the sample size the library gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub format: OutputFormat,
    pub timestamps: TimestampSource,
    pub ids: Vec<u64>,
    pub sample_size: usize,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_ne_bytes(w)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_ne_bytes(w)
}

impl Layout {
    /// A layout whose sample size the library reported; checked against
    /// what the format needs for the IDs.
    pub fn new(
        format: OutputFormat,
        timestamps: TimestampSource,
        ids: Vec<u64>,
        sample_size: usize,
    ) -> Result<Layout, DecodeError> {
        let need = format.sample_size(ids.len());
        if sample_size < need {
            return Err(DecodeError::SampleTooSmall { sample_size, need });
        }
        Ok(Layout {
            format,
            timestamps,
            ids,
            sample_size,
        })
    }

    /// Decode the first `n_valid` samples of `buf`. Never reads past the
    /// buffer and never allocates more than the buffer can hold.
    pub fn decode(&self, buf: &[u8], n_valid: u32) -> Result<Vec<Sample>, DecodeError> {
        let need = self.format.sample_size(self.ids.len());
        if self.sample_size < need || self.sample_size == 0 {
            return Err(DecodeError::SampleTooSmall {
                sample_size: self.sample_size,
                need,
            });
        }
        let have = buf.len() / self.sample_size;
        if n_valid as usize > have {
            return Err(DecodeError::BufferShort {
                samples: n_valid,
                have,
            });
        }
        buf.chunks_exact(self.sample_size)
            .take(n_valid as usize)
            .map(|s| self.decode_one(s))
            .collect()
    }

    /// One sample (`s` is at least `format.sample_size(ids)` long).
    fn decode_one(&self, s: &[u8]) -> Result<Sample, DecodeError> {
        let sample_id = u32_at(s, 0);
        let ts = self.timestamps;
        match self.format {
            OutputFormat::IdValue64 => {
                let mut values = Vec::with_capacity(self.ids.len());
                let (mut earliest, mut latest) = (u64::MAX, 0u64);
                for (i, &expected) in self.ids.iter().enumerate() {
                    let at = 8 + i * 24;
                    let found = u64_at(s, at);
                    if found != expected {
                        return Err(DecodeError::WrongDataId {
                            sample: sample_id,
                            index: i,
                            expected,
                            found,
                        });
                    }
                    let t = ts.nanos(u32_at(s, at + 8), u32_at(s, at + 12));
                    earliest = earliest.min(t);
                    latest = latest.max(t);
                    values.push(u64_at(s, at + 16));
                }
                if values.is_empty() {
                    earliest = 0;
                }
                Ok(Sample {
                    sample_id,
                    earliest_ns: earliest,
                    latest_ns: latest,
                    values,
                })
            }
            OutputFormat::Values64 | OutputFormat::Values32 => {
                let (h, el, ll) = (u32_at(s, 4), u32_at(s, 8), u32_at(s, 12));
                let values = (0..self.ids.len())
                    .map(|i| match self.format {
                        OutputFormat::Values32 => u64::from(u32_at(s, 16 + i * 4)),
                        _ => u64_at(s, 16 + i * 8),
                    })
                    .collect();
                Ok(Sample {
                    sample_id,
                    earliest_ns: ts.nanos(h, el),
                    latest_ns: ts.latest(h, el, ll),
                    values,
                })
            }
        }
    }
}

/// What one `query_counters` call returned, as the library's status says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryStatus {
    /// Consecutive samples.
    Complete,
    /// DOCA_ERROR_SKIPPED: the data is valid but samples before it were
    /// dropped (the device's buffer went round before it was read).
    Dropped,
}

/// Encode samples as the library would write them (tests, the fuzz
/// target and documentation of the layout by example).
pub fn encode(layout: &Layout, samples: &[Sample]) -> Vec<u8> {
    let mut out = vec![0u8; layout.sample_size * samples.len()];
    let put32 = |b: &mut [u8], at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
    let put64 = |b: &mut [u8], at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_ne_bytes());
    let split = |ns: u64| -> (u32, u32) {
        match layout.timestamps {
            TimestampSource::Frc => ((ns >> 32) as u32, ns as u32),
            TimestampSource::Rtc => ((ns / 1_000_000_000) as u32, (ns % 1_000_000_000) as u32),
        }
    };
    for (s, b) in samples.iter().zip(out.chunks_exact_mut(layout.sample_size)) {
        put32(b, 0, s.sample_id);
        match layout.format {
            OutputFormat::IdValue64 => {
                for (i, (&id, &v)) in layout.ids.iter().zip(&s.values).enumerate() {
                    let at = 8 + i * 24;
                    let (h, l) = split(s.earliest_ns);
                    put64(b, at, id);
                    put32(b, at + 8, h);
                    put32(b, at + 12, l);
                    put64(b, at + 16, v);
                }
            }
            OutputFormat::Values64 | OutputFormat::Values32 => {
                let (h, el) = split(s.earliest_ns);
                let (_, ll) = split(s.latest_ns);
                put32(b, 4, h);
                put32(b, 8, el);
                put32(b, 12, ll);
                for (i, &v) in s.values.iter().enumerate().take(layout.ids.len()) {
                    if layout.format == OutputFormat::Values32 {
                        put32(b, 16 + i * 4, v as u32);
                    } else {
                        put64(b, 16 + i * 8, v);
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDS: [u64; 2] = [0x1020_0001_0000_0001, 0x1140_0001_0000_0001];

    fn layout(format: OutputFormat, ts: TimestampSource) -> Layout {
        Layout::new(format, ts, IDS.to_vec(), format.sample_size(IDS.len())).unwrap()
    }

    /// The codes of `enum doca_telemetry_diag_output_format`, each named
    /// once, in order, and none past them.
    #[test]
    fn output_formats_are_the_library_codes() {
        use OutputFormat::*;
        assert_eq!(OutputFormat::ALL, [IdValue64, Values64, Values32]);
        for (code, f) in (0u8..).zip(OutputFormat::ALL) {
            assert_eq!(f as u8, code);
            assert_eq!(OutputFormat::from_code(code), Some(f));
        }
        assert_eq!(OutputFormat::from_code(3), None);
    }

    /// Bytes written by hand for each format, as the guide lays them out.
    #[test]
    fn each_format_decodes_from_hand_written_bytes() {
        // Format 0: header {7, 0}, then {id, h, l, value} per ID (FRC).
        let mut b = Vec::new();
        b.extend(7u32.to_ne_bytes());
        b.extend(0u32.to_ne_bytes());
        for (id, l, v) in [(IDS[0], 100u32, 5000u64), (IDS[1], 140, 6000)] {
            b.extend(id.to_ne_bytes());
            b.extend(1u32.to_ne_bytes());
            b.extend(l.to_ne_bytes());
            b.extend(v.to_ne_bytes());
        }
        let s = layout(OutputFormat::IdValue64, TimestampSource::Frc)
            .decode(&b, 1)
            .unwrap();
        assert_eq!(
            s,
            vec![Sample {
                sample_id: 7,
                earliest_ns: (1 << 32) | 100,
                latest_ns: (1 << 32) | 140,
                values: vec![5000, 6000],
            }]
        );

        // Formats 1 and 2: header {id, h, el, ll} then the values (RTC).
        for (format, width) in [(OutputFormat::Values64, 8), (OutputFormat::Values32, 4)] {
            let mut b = Vec::new();
            for w in [9u32, 3, 999_999_000, 500] {
                b.extend(w.to_ne_bytes());
            }
            for v in [5000u64, 6000] {
                b.extend(&v.to_ne_bytes()[..width]);
            }
            let s = layout(format, TimestampSource::Rtc).decode(&b, 1).unwrap();
            assert_eq!(s[0].sample_id, 9);
            assert_eq!(s[0].values, vec![5000, 6000]);
            assert_eq!(s[0].earliest_ns, 3_999_999_000);
            // The latest low word went past the second: next second.
            assert_eq!(s[0].latest_ns, 4_000_000_500, "{format:?}");
        }
    }

    #[test]
    fn frc_low_word_wrap_carries_into_the_high_word() {
        let l = layout(OutputFormat::Values64, TimestampSource::Frc);
        let mut b = Vec::new();
        for w in [1u32, 5, u32::MAX - 1, 3] {
            b.extend(w.to_ne_bytes());
        }
        b.extend([0u8; 16]);
        let s = l.decode(&b, 1).unwrap();
        assert_eq!(s[0].earliest_ns, (5 << 32) | u64::from(u32::MAX - 1));
        assert_eq!(s[0].latest_ns, (6 << 32) | 3);
    }

    #[test]
    fn round_trips_every_format_and_source_over_several_samples() {
        for f in OutputFormat::ALL {
            for ts in [TimestampSource::Frc, TimestampSource::Rtc] {
                // A larger sample size than needed (padding) is allowed.
                let l = Layout::new(f, ts, IDS.to_vec(), f.sample_size(2) + 8).unwrap();
                let samples: Vec<Sample> = (0..3)
                    .map(|k| Sample {
                        sample_id: k,
                        earliest_ns: 5_000_000_000 + u64::from(k) * 100,
                        latest_ns: 5_000_000_000 + u64::from(k) * 100,
                        values: vec![u64::from(k) * 1000, u64::from(k) * 7],
                    })
                    .collect();
                let buf = encode(&l, &samples);
                assert_eq!(l.decode(&buf, 3).unwrap(), samples, "{f:?} {ts:?}");
                // Fewer valid samples than the buffer holds.
                assert_eq!(l.decode(&buf, 1).unwrap(), samples[..1]);
            }
        }
    }

    #[test]
    fn sizes_from_the_library_are_checked() {
        assert_eq!(
            Layout::new(
                OutputFormat::Values64,
                TimestampSource::Frc,
                IDS.to_vec(),
                20
            ),
            Err(DecodeError::SampleTooSmall {
                sample_size: 20,
                need: 32
            })
        );
        let l = layout(OutputFormat::Values32, TimestampSource::Frc);
        assert_eq!(
            l.decode(&[0u8; 30], 2),
            Err(DecodeError::BufferShort {
                samples: 2,
                have: 1
            })
        );
        assert_eq!(l.decode(&[], 0), Ok(vec![]));
    }

    #[test]
    fn format_0_checks_each_entry_names_its_applied_id() {
        let l = layout(OutputFormat::IdValue64, TimestampSource::Frc);
        let mut buf = encode(
            &l,
            &[Sample {
                sample_id: 1,
                earliest_ns: 0,
                latest_ns: 0,
                values: vec![1, 2],
            }],
        );
        // Second entry's ID replaced.
        buf[8 + 24..8 + 32].copy_from_slice(&0x1020_0005_0000_0001u64.to_ne_bytes());
        assert!(matches!(
            l.decode(&buf, 1),
            Err(DecodeError::WrongDataId { index: 1, .. })
        ));
    }
}
