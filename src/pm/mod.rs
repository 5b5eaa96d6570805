//! Performance Management attribute codecs: pure functions over byte slices.
//!
//! Each attribute lists its fields once, as a table of [`layout::Field`]
//! (IBTA name, bit offset, width), and its `decode`/`encode` walk that table.
//! The PM data area is the 192 bytes at offset 64 of the 256-byte MAD
//! ([`mad`]).

#[macro_use]
pub mod decl;
pub mod class_port_info;
pub mod layout;
pub mod mad;
pub mod optional;
pub mod port_counters;
pub mod port_counters_ext;
pub mod samples;

pub use class_port_info::ClassPortInfo;
pub use layout::Field;
pub use mad::{MadError, MadHeader};
pub use port_counters::PortCounters;
pub use port_counters_ext::PortCountersExtended;
pub use samples::{PortSamplesControl, PortSamplesResult};

/// An attribute of per-port counters that a Set clears by CounterSelect
/// and CounterSelect2 bits (PortCounters, PortCountersExtended).
pub trait CounterAttribute: Sized {
    type Field: Copy;
    fn decode(d: &[u8; mad::DATA_SIZE]) -> Self;
    fn encode(&self, d: &mut [u8; mad::DATA_SIZE]);
    fn set(&mut self, f: Self::Field, v: u64);
    fn port_select(&self) -> u8;
    /// A body with this one's PortSelect and select fields, counters zero.
    fn selects(&self) -> Self;
    /// A Set with this body clears `f`.
    fn clears(&self, f: Self::Field) -> bool;
    /// The largest value `f` holds.
    fn max(f: Self::Field) -> u64;
}

/// `$cs2`: the attribute's CounterSelect2 field, when it has one.
macro_rules! counter_attribute {
    ($t:ty, $f:ty $(, $cs2:ident)?) => {
        impl CounterAttribute for $t {
            type Field = $f;
            fn decode(d: &[u8; mad::DATA_SIZE]) -> Self {
                <$t>::decode(d)
            }
            fn encode(&self, d: &mut [u8; mad::DATA_SIZE]) {
                <$t>::encode(self, d)
            }
            fn set(&mut self, f: $f, v: u64) {
                <$t>::set(self, f, v)
            }
            fn port_select(&self) -> u8 {
                self.port_select
            }
            fn selects(&self) -> Self {
                let mut s = Self::default();
                s.port_select = self.port_select;
                s.counter_select = self.counter_select;
                $( s.$cs2 = self.$cs2; )?
                s
            }
            fn clears(&self, f: $f) -> bool {
                f.clear().is_some_and(|b| {
                    u32::from(self.counter_select) & b.select() != 0
                        $( || u32::from(self.$cs2) & b.select2() != 0 )?
                })
            }
            fn max(f: $f) -> u64 {
                f.field().max()
            }
        }
    };
}
counter_attribute!(
    PortCounters,
    port_counters::PortCountersField,
    counter_select2
);
counter_attribute!(
    PortCountersExtended,
    port_counters_ext::PortCountersExtendedField,
    counter_select2
);

/// The field table of a PM attribute by ID (ClassPortInfo lists its scalar
/// fields only; PortSamplesControl lists its scalar fields, then the 15
/// masks, then the 15 selects).
pub fn fields_of(attr_id: u16) -> Vec<Field> {
    match attr_id {
        mad::attr::CLASS_PORT_INFO => class_port_info::FIELDS.to_vec(),
        mad::attr::PORT_COUNTERS => port_counters::FIELDS.to_vec(),
        mad::attr::PORT_COUNTERS_EXTENDED => port_counters_ext::FIELDS.to_vec(),
        mad::attr::PORT_SAMPLES_CONTROL => {
            let mut v = samples::CONTROL_FIELDS.to_vec();
            v.extend_from_slice(&samples::COUNTER_MASKS);
            v.extend_from_slice(&samples::COUNTER_SELECTS);
            v
        }
        mad::attr::PORT_SAMPLES_RESULT => {
            let mut v = samples::RESULT_FIELDS.to_vec();
            v.extend_from_slice(&samples::RESULT_COUNTERS);
            v
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random generator for filling structs.
    fn next(s: &mut u64) -> u64 {
        *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn mask(width: usize) -> u64 {
        if width >= 64 {
            u64::MAX
        } else {
            (1 << width) - 1
        }
    }

    /// Random data with every table field set to a random in-range value
    /// must decode, re-encode to the identical bytes on the fields' bits.
    fn table_round_trip(fields: &[Field], decode_encode: impl Fn(&[u8; 192]) -> [u8; 192]) {
        let mut s = 42;
        for _ in 0..200 {
            let mut d = [0u8; 192];
            for f in fields {
                assert!(f.set(&mut d, next(&mut s)), "{} fits", f.name);
            }
            let out = decode_encode(&d);
            for f in fields {
                assert_eq!(f.get(&out), f.get(&d), "field {}", f.name);
                assert!(f.get(&out) <= mask(f.width));
            }
        }
    }

    #[test]
    fn tables_do_not_overlap_and_fit() {
        for id in [0x01u16, 0x10, 0x11, 0x12, 0x1D] {
            let mut fs = fields_of(id);
            fs.sort_by_key(|f| f.offset);
            for w in fs.windows(2) {
                assert!(
                    w[0].offset + w[0].width <= w[1].offset,
                    "attr {id:#x}: {} overlaps {}",
                    w[0].name,
                    w[1].name
                );
            }
            let last = fs.last().unwrap();
            assert!(last.offset + last.width <= 192 * 8);
        }
    }

    #[test]
    fn round_trips() {
        table_round_trip(&fields_of(0x12), |d| {
            let mut o = [0u8; 192];
            PortCounters::decode(d).encode(&mut o);
            o
        });
        table_round_trip(&fields_of(0x1D), |d| {
            let mut o = [0u8; 192];
            PortCountersExtended::decode(d).encode(&mut o);
            o
        });
        table_round_trip(&fields_of(0x10), |d| {
            let mut o = [0u8; 192];
            PortSamplesControl::decode(d).encode(&mut o);
            o
        });
        table_round_trip(&fields_of(0x11), |d| {
            let mut o = [0u8; 192];
            PortSamplesResult::decode(d).encode(&mut o);
            o
        });
        table_round_trip(&fields_of(0x01), |d| {
            let mut o = [0u8; 192];
            ClassPortInfo::decode(d).encode(&mut o);
            o
        });
    }

    #[test]
    fn struct_round_trip_with_gids() {
        let cpi = ClassPortInfo {
            base_version: 1,
            class_version: 1,
            capability_mask: 0x1300,
            capability_mask2: 0x7ff_ffff,
            resp_time_value: 0x12,
            redirect_gid: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8],
            redirect_tc: 3,
            redirect_sl: 0xf,
            redirect_fl: 0xfffff,
            redirect_lid: 0xbeef,
            redirect_pkey: 0xffff,
            redirect_qp: 0xabcdef,
            redirect_qkey: 0x8001_0000,
            trap_gid: [9; 16],
            trap_tc: 1,
            trap_sl: 2,
            trap_fl: 3,
            trap_lid: 4,
            trap_pkey: 5,
            trap_hl: 6,
            trap_qp: 7,
            trap_qkey: 8,
        };
        let mut d = [0u8; 192];
        cpi.encode(&mut d);
        assert_eq!(ClassPortInfo::decode(&d), cpi);
        // Positions checked against the IBTA table: RedirectGID at byte 8,
        // RedirectLID at byte 28, RedirectQP at byte 33, TrapQKey at byte 68.
        assert_eq!(&d[8..10], &[0xfe, 0x80]);
        assert_eq!(&d[28..30], &[0xbe, 0xef]);
        assert_eq!(&d[33..36], &[0xab, 0xcd, 0xef]);
        assert_eq!(&d[68..72], &[0, 0, 0, 8]);
        assert_eq!(d[7], 0x12 | 0xe0); // last 3 bits of CapMask2 + RespTimeValue
    }

    #[test]
    fn samples_control_mask_positions() {
        let mut c = PortSamplesControl::default();
        c.counter_masks[0] = 0b111;
        let mut d = [0u8; 192];
        c.encode(&mut d);
        // Bits 34..37: byte 4 bits 2..4 (MSB numbering) = 0b0011_1000.
        assert_eq!(d[4], 0b0011_1000);
        let mut c = PortSamplesControl::default();
        c.counter_masks[10] = 0b100;
        let mut d = [0u8; 192];
        c.encode(&mut d);
        // Bit 65 = byte 8, second most significant bit.
        assert_eq!(d[8], 0b0100_0000);
        let mut c = PortSamplesControl::default();
        c.counter_select[14] = 0x1234;
        c.counter_width = 4;
        c.sample_status = 2;
        let mut d = [0u8; 192];
        c.encode(&mut d);
        assert_eq!(&d[(304 + 16 * 14) / 8..][..2], &[0x12, 0x34]);
        assert_eq!(d[3], 4);
        assert_eq!(d[11], 2);
        assert_eq!(PortSamplesControl::decode(&d), c);
    }

    #[test]
    fn field_enums_follow_their_tables() {
        use port_counters::PortCountersField as F;
        for (f, row) in F::ALL.iter().zip(port_counters::FIELDS) {
            assert_eq!(f.field(), *row);
        }
        use port_counters_ext::PortCountersExtendedField as X;
        assert_eq!(X::ALL.len(), port_counters_ext::FIELDS.len());
        use class_port_info::ClassPortInfoField as C;
        assert_eq!(C::ALL.len(), class_port_info::FIELDS.len());
        // The IBA CounterSelect bits: the 16 error and data counters in
        // field order, then PortXmitWait in CounterSelect2 bit 0.
        let c = &port_counters::COUNTERS;
        assert_eq!(c.len(), 17);
        for (i, d) in c.iter().take(16).enumerate() {
            assert_eq!((d.select, d.select2), (1 << i, 0), "{}", d.name());
        }
        assert_eq!(
            (c[16].name(), c[16].select, c[16].select2),
            ("PortXmitWait", 0, 1)
        );
        assert_eq!(port_counters::slot(F::Qp1Dropped), None, "no clear bit");
        assert_eq!(X::MulticastRcvPkts.clear(), Some(decl::ClearBit::Select(7)));
        assert_eq!(X::Qp1Dropped.clear(), Some(decl::ClearBit::Select2(13)));
    }

    #[test]
    fn four_bit_counters_truncate() {
        let pc = PortCounters {
            local_link_integrity_errors: 0x1f,
            excessive_buffer_overrun_errors: 0x12,
            ..Default::default()
        };
        let mut d = [0u8; 192];
        pc.encode(&mut d);
        assert_eq!(d[19], 0xf2);
        let back = PortCounters::decode(&d);
        assert_eq!(back.local_link_integrity_errors, 0xf);
        assert_eq!(back.excessive_buffer_overrun_errors, 0x2);
    }
}

#[cfg(test)]
mod wire_tests;
