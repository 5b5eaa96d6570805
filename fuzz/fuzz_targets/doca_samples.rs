//! DOCA telemetry diag sample buffers: any format, timestamp source,
//! applied data IDs, sample size and valid count the library may report,
//! over any bytes: decoding never panics, never reads past the buffer, and
//! what decodes re-encodes to the same samples.
#![no_main]

use ibpm_agentx::doca::DATA_IDS;
use ibpm_agentx::doca::decode::{Layout, OutputFormat, TimestampSource, encode};
use ibpm_agentx_fuzz::Bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let format = OutputFormat::ALL[usize::from(b.u8()) % OutputFormat::ALL.len()];
    let ts = if b.u8() & 1 == 0 {
        TimestampSource::Frc
    } else {
        TimestampSource::Rtc
    };
    let n_ids = usize::from(b.u8() % 16);
    let ids: Vec<u64> = (0..n_ids)
        .map(|i| DATA_IDS[i % DATA_IDS.len()].for_port(1 + (i / DATA_IDS.len()) as u8))
        .collect();
    let sample_size = usize::from(b.u16() % 512);
    let n_valid = u32::from(b.u8());
    let buf = b.take(usize::MAX);
    let Ok(layout) = Layout::new(format, ts, ids, sample_size) else {
        return;
    };
    if let Ok(samples) = layout.decode(buf, n_valid) {
        assert_eq!(samples.len(), n_valid as usize);
        let again = encode(&layout, &samples);
        let redecoded = layout.decode(&again, n_valid).expect("re-decodes");
        for (a, b) in samples.iter().zip(&redecoded) {
            assert_eq!(a.sample_id, b.sample_id);
            assert_eq!(a.values, b.values);
        }
    }
});
