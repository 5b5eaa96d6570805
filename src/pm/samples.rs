//! PortSamplesControl (0x0010) and PortSamplesResult (0x0011).

use super::layout::Field;

/// Number of sample counters.
pub const NUM_COUNTERS: usize = 15;

const fn mask_offset(i: usize) -> usize {
    // CounterMask0 at 34, masks 1..9 follow it, bit 64 is reserved, masks
    // 10..14 start at 65; 3 bits each.
    if i < 10 {
        34 + 3 * i
    } else {
        65 + 3 * (i - 10)
    }
}

const fn indexed(
    names: [&'static str; NUM_COUNTERS],
    base: usize,
    step: usize,
    width: usize,
    masks: bool,
) -> [Field; NUM_COUNTERS] {
    let mut out = [Field::new("", 0, 0); NUM_COUNTERS];
    let mut i = 0;
    while i < NUM_COUNTERS {
        let offset = if masks {
            mask_offset(i)
        } else {
            base + step * i
        };
        out[i] = Field::new(names[i], offset, width);
        i += 1;
    }
    out
}

/// CounterMask0..14 (3 bits each).
pub const COUNTER_MASKS: [Field; NUM_COUNTERS] =
    indexed(names15!("CounterMask", ""), 0, 0, 3, true);
/// CounterSelect0..14 (16 bits each, from bit 304).
pub const COUNTER_SELECTS: [Field; NUM_COUNTERS] =
    indexed(names15!("CounterSelect", ""), 304, 16, 16, false);
/// Counter0..14 of PortSamplesResult (32 bits each, from bit 32).
pub const RESULT_COUNTERS: [Field; NUM_COUNTERS] =
    indexed(names15!("Counter", ""), 32, 32, 32, false);

/// Counter0..14 of PortSamplesResultExtended (64 bits each, from bit 64).
pub const RESULT_EXT_COUNTERS: [Field; NUM_COUNTERS] =
    indexed(names15!("Counter", ""), 64, 64, 64, false);

pm_attr! {
    /// The control fields are in [`CONTROL_FIELDS`], the masks and selects
    /// in [`COUNTER_MASKS`] and [`COUNTER_SELECTS`].
    pub struct PortSamplesControl in [u8; super::mad::DATA_SIZE], fields PortSamplesControlField, table CONTROL_FIELDS {
        OpCode op_code: u8 = "OpCode" @ 0:8;
        PortSelect port_select: u8 = "PortSelect" @ 8:8;
        Tick tick: u8 = "Tick" @ 16:8;
        CounterWidth counter_width: u8 = "CounterWidth" @ 29:3;
        SampleMechanisms sample_mechanisms: u8 = "SampleMechanisms" @ 80:8;
        SampleStatus sample_status: u8 = "SampleStatus" @ 94:2;
        OptionMask option_mask: u64 = "OptionMask" @ 96:64;
        VendorMask vendor_mask: u64 = "VendorMask" @ 160:64;
        SampleStart sample_start: u32 = "SampleStart" @ 224:32;
        SampleInterval sample_interval: u32 = "SampleInterval" @ 256:32;
        Tag tag: u16 = "Tag" @ 288:16;
        SamplesOnlyOptionMask samples_only_option_mask: u64 = "SamplesOnlyOptionMask" @ 576:64;
    }
    arrays {
        /// CounterMask0..14.
        counter_masks: [u8; NUM_COUNTERS] = COUNTER_MASKS;
        /// CounterSelect0..14.
        counter_select: [u16; NUM_COUNTERS] = COUNTER_SELECTS;
    }
}

pm_attr! {
    /// Tag and SampleStatus are in [`RESULT_FIELDS`], the counters in
    /// [`RESULT_COUNTERS`].
    pub struct PortSamplesResult in [u8; super::mad::DATA_SIZE], fields PortSamplesResultField, table RESULT_FIELDS {
        Tag tag: u16 = "Tag" @ 0:16;
        SampleStatus sample_status: u8 = "SampleStatus" @ 30:2;
    }
    arrays {
        /// Counter0..14.
        counters: [u32; NUM_COUNTERS] = RESULT_COUNTERS;
    }
}

pm_attr! {
    /// PortSamplesResultExtended (0x001E): the sample's counts in 64 bits.
    /// Tag, SampleStatus and ExtendedWidth are in [`RESULT_EXT_FIELDS`],
    /// the counters in [`RESULT_EXT_COUNTERS`].
    pub struct PortSamplesResultExtended in [u8; super::mad::DATA_SIZE], fields PortSamplesResultExtendedField, table RESULT_EXT_FIELDS {
        Tag tag: u16 = "Tag" @ 0:16;
        SampleStatus sample_status: u8 = "SampleStatus" @ 30:2;
        /// 2: the counters are 64 bits wide.
        ExtendedWidth extended_width: u8 = "ExtendedWidth" @ 32:2;
    }
    arrays {
        /// Counter0..14.
        counters: [u64; NUM_COUNTERS] = RESULT_EXT_COUNTERS;
    }
}

/// ExtendedWidth of 64-bit sample counters.
pub const EXTENDED_WIDTH_64: u8 = 2;

/// SampleStatus values.
pub const STATUS_DONE: u8 = 0;
pub const STATUS_STARTING: u8 = 1;
pub const STATUS_RUNNING: u8 = 2;

/// CounterSelect quantity codes (mandatory ones).
pub const Q_NONE: u16 = 0x0000;
pub const Q_XMIT_DATA: u16 = 0x0001;
pub const Q_RCV_DATA: u16 = 0x0002;
pub const Q_XMIT_PKTS: u16 = 0x0003;
pub const Q_RCV_PKTS: u16 = 0x0004;
pub const Q_XMIT_WAIT: u16 = 0x0005;

/// CounterWidth encodings: 0 = 16 bits, 1 = 20, 2 = 24, 3 = 28, 4 = 32.
pub fn counter_width_bits(code: u8) -> Option<u32> {
    match code {
        0..=4 => Some(16 + 4 * u32::from(code)),
        _ => None,
    }
}
