//! PortSamplesControl (0x0010) and PortSamplesResult (0x0011).

use super::layout::Field;
use super::mad::DATA_SIZE;

/// Number of sample counters.
pub const NUM_COUNTERS: usize = 15;

pub const OP_CODE: Field = Field::new("OpCode", 0, 8);
pub const PORT_SELECT: Field = Field::new("PortSelect", 8, 8);
pub const TICK: Field = Field::new("Tick", 16, 8);
pub const COUNTER_WIDTH: Field = Field::new("CounterWidth", 29, 3);
pub const SAMPLE_MECHANISMS: Field = Field::new("SampleMechanisms", 80, 8);
pub const SAMPLE_STATUS: Field = Field::new("SampleStatus", 94, 2);
pub const OPTION_MASK: Field = Field::new("OptionMask", 96, 64);
pub const VENDOR_MASK: Field = Field::new("VendorMask", 160, 64);
pub const SAMPLE_START: Field = Field::new("SampleStart", 224, 32);
pub const SAMPLE_INTERVAL: Field = Field::new("SampleInterval", 256, 32);
pub const TAG: Field = Field::new("Tag", 288, 16);
pub const SAMPLES_ONLY_OPTION_MASK: Field = Field::new("SamplesOnlyOptionMask", 576, 64);

const fn mask_offset(i: usize) -> usize {
    // CounterMask0 at 34, masks 1..9 follow it, bit 64 is reserved, masks
    // 10..14 start at 65; 3 bits each.
    if i < 10 {
        34 + 3 * i
    } else {
        65 + 3 * (i - 10)
    }
}

const MASK_NAMES: [&str; NUM_COUNTERS] = [
    "CounterMask0",
    "CounterMask1",
    "CounterMask2",
    "CounterMask3",
    "CounterMask4",
    "CounterMask5",
    "CounterMask6",
    "CounterMask7",
    "CounterMask8",
    "CounterMask9",
    "CounterMask10",
    "CounterMask11",
    "CounterMask12",
    "CounterMask13",
    "CounterMask14",
];
const SELECT_NAMES: [&str; NUM_COUNTERS] = [
    "CounterSelect0",
    "CounterSelect1",
    "CounterSelect2",
    "CounterSelect3",
    "CounterSelect4",
    "CounterSelect5",
    "CounterSelect6",
    "CounterSelect7",
    "CounterSelect8",
    "CounterSelect9",
    "CounterSelect10",
    "CounterSelect11",
    "CounterSelect12",
    "CounterSelect13",
    "CounterSelect14",
];
const RESULT_NAMES: [&str; NUM_COUNTERS] = [
    "Counter0",
    "Counter1",
    "Counter2",
    "Counter3",
    "Counter4",
    "Counter5",
    "Counter6",
    "Counter7",
    "Counter8",
    "Counter9",
    "Counter10",
    "Counter11",
    "Counter12",
    "Counter13",
    "Counter14",
];

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
pub const COUNTER_MASKS: [Field; NUM_COUNTERS] = indexed(MASK_NAMES, 0, 0, 3, true);
/// CounterSelect0..14 (16 bits each, from bit 304).
pub const COUNTER_SELECTS: [Field; NUM_COUNTERS] = indexed(SELECT_NAMES, 304, 16, 16, false);

/// The control fields in wire order (masks and selects are in
/// [`COUNTER_MASKS`] and [`COUNTER_SELECTS`]).
pub const CONTROL_FIELDS: &[Field] = &[
    OP_CODE,
    PORT_SELECT,
    TICK,
    COUNTER_WIDTH,
    SAMPLE_MECHANISMS,
    SAMPLE_STATUS,
    OPTION_MASK,
    VENDOR_MASK,
    SAMPLE_START,
    SAMPLE_INTERVAL,
    TAG,
    SAMPLES_ONLY_OPTION_MASK,
];

pub const RESULT_TAG: Field = Field::new("Tag", 0, 16);
pub const RESULT_SAMPLE_STATUS: Field = Field::new("SampleStatus", 30, 2);
/// Counter0..14 of PortSamplesResult (32 bits each, from bit 32).
pub const RESULT_COUNTERS: [Field; NUM_COUNTERS] = indexed(RESULT_NAMES, 32, 32, 32, false);

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

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortSamplesControl {
    pub op_code: u8,
    pub port_select: u8,
    pub tick: u8,
    pub counter_width: u8,
    pub counter_masks: [u8; NUM_COUNTERS],
    pub sample_mechanisms: u8,
    pub sample_status: u8,
    pub option_mask: u64,
    pub vendor_mask: u64,
    pub sample_start: u32,
    pub sample_interval: u32,
    pub tag: u16,
    pub counter_select: [u16; NUM_COUNTERS],
    pub samples_only_option_mask: u64,
}

impl PortSamplesControl {
    pub fn decode(d: &[u8; DATA_SIZE]) -> Self {
        let mut counter_masks = [0u8; NUM_COUNTERS];
        let mut counter_select = [0u16; NUM_COUNTERS];
        for i in 0..NUM_COUNTERS {
            counter_masks[i] = COUNTER_MASKS[i].get(d) as u8;
            counter_select[i] = COUNTER_SELECTS[i].get(d) as u16;
        }
        PortSamplesControl {
            op_code: OP_CODE.get(d) as u8,
            port_select: PORT_SELECT.get(d) as u8,
            tick: TICK.get(d) as u8,
            counter_width: COUNTER_WIDTH.get(d) as u8,
            counter_masks,
            sample_mechanisms: SAMPLE_MECHANISMS.get(d) as u8,
            sample_status: SAMPLE_STATUS.get(d) as u8,
            option_mask: OPTION_MASK.get(d),
            vendor_mask: VENDOR_MASK.get(d),
            sample_start: SAMPLE_START.get(d) as u32,
            sample_interval: SAMPLE_INTERVAL.get(d) as u32,
            tag: TAG.get(d) as u16,
            counter_select,
            samples_only_option_mask: SAMPLES_ONLY_OPTION_MASK.get(d),
        }
    }

    pub fn encode(&self, d: &mut [u8; DATA_SIZE]) {
        OP_CODE.set(d, self.op_code.into());
        PORT_SELECT.set(d, self.port_select.into());
        TICK.set(d, self.tick.into());
        COUNTER_WIDTH.set(d, self.counter_width.into());
        for i in 0..NUM_COUNTERS {
            COUNTER_MASKS[i].set(d, self.counter_masks[i].into());
            COUNTER_SELECTS[i].set(d, self.counter_select[i].into());
        }
        SAMPLE_MECHANISMS.set(d, self.sample_mechanisms.into());
        SAMPLE_STATUS.set(d, self.sample_status.into());
        OPTION_MASK.set(d, self.option_mask);
        VENDOR_MASK.set(d, self.vendor_mask);
        SAMPLE_START.set(d, self.sample_start.into());
        SAMPLE_INTERVAL.set(d, self.sample_interval.into());
        TAG.set(d, self.tag.into());
        SAMPLES_ONLY_OPTION_MASK.set(d, self.samples_only_option_mask);
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortSamplesResult {
    pub tag: u16,
    pub sample_status: u8,
    pub counters: [u32; NUM_COUNTERS],
}

impl PortSamplesResult {
    pub fn decode(d: &[u8; DATA_SIZE]) -> Self {
        let mut counters = [0u32; NUM_COUNTERS];
        for (c, f) in counters.iter_mut().zip(RESULT_COUNTERS.iter()) {
            *c = f.get(d) as u32;
        }
        PortSamplesResult {
            tag: RESULT_TAG.get(d) as u16,
            sample_status: RESULT_SAMPLE_STATUS.get(d) as u8,
            counters,
        }
    }

    pub fn encode(&self, d: &mut [u8; DATA_SIZE]) {
        RESULT_TAG.set(d, self.tag.into());
        RESULT_SAMPLE_STATUS.set(d, self.sample_status.into());
        for (c, f) in self.counters.iter().zip(RESULT_COUNTERS.iter()) {
            f.set(d, (*c).into());
        }
    }
}
