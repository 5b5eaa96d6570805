//! `pm_attr!`: one declaration per MAD attribute (the PM attributes and the
//! SMP attributes discovery reads).
//!
//! Each field is one line: its variant in the attribute's field enum, its
//! struct member and Rust type, its IBTA name, bit offset and width (IBTA
//! numbering, offsets into the attribute's data area, whose size the
//! declaration names) and, for a counter, the
//! CounterSelect (`cs`) or CounterSelect2 (`cs2`) bit that clears it. From
//! that the macro makes the struct, the field enum (with `ALL`, `field()`
//! and `clear()`), the wire-order table `FIELDS`, `decode`/`encode`, and
//! `get`/`set` by field; compile-time checks keep every width within its
//! Rust type and the fields ascending, non-overlapping and inside the data.
//! Byte-string fields (GIDs) and the repeated fields of the sample
//! attributes are declared in the optional `bytes` and `arrays` sections.

use super::layout::Field;

/// The bit that clears a counter in a Set of its attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClearBit {
    /// Bit n of CounterSelect.
    Select(u8),
    /// Bit n of CounterSelect2.
    Select2(u8),
}

impl ClearBit {
    /// The CounterSelect mask of this bit (0 for a CounterSelect2 bit).
    pub const fn select(self) -> u32 {
        match self {
            ClearBit::Select(b) => 1 << b,
            ClearBit::Select2(_) => 0,
        }
    }

    /// The CounterSelect2 mask of this bit (0 for a CounterSelect bit).
    pub const fn select2(self) -> u32 {
        match self {
            ClearBit::Select(_) => 0,
            ClearBit::Select2(b) => 1 << b,
        }
    }
}

/// Conversion between a struct member and the bits of its field.
pub trait Bits: Copy {
    /// Number of bits the type holds.
    const BITS: usize;
    fn to_bits(self) -> u64;
    /// Keeps the low bits that fit.
    fn from_bits(v: u64) -> Self;
}

macro_rules! bits {
    ($($t:ty),*) => {$(
        impl Bits for $t {
            const BITS: usize = <$t>::BITS as usize;
            fn to_bits(self) -> u64 {
                u64::from(self)
            }
            fn from_bits(v: u64) -> Self {
                v as $t
            }
        }
    )*};
}
bits!(u8, u16, u32, u64);

/// Two strings are equal, in a const context (field names looked up by
/// name at compile time).
pub const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Panics at compile time (the tables are consts) when the fields are not
/// ascending, overlap, or run past the data area.
pub const fn check_layout(fields: &[Field], data_bits: usize) {
    let mut i = 0;
    while i < fields.len() {
        let f = fields[i];
        assert!(f.width >= 1 && f.width <= 64, "field width out of 1..=64");
        assert!(f.offset + f.width <= data_bits, "field past the data area");
        if i + 1 < fields.len() {
            assert!(
                f.offset + f.width <= fields[i + 1].offset,
                "fields out of order or overlapping"
            );
        }
        i += 1;
    }
}

/// The 15 names `prefix0suffix` .. `prefix14suffix` of a repeated field or
/// column.
macro_rules! names15 {
    ($prefix:literal, $suffix:literal) => {
        [
            concat!($prefix, "0", $suffix),
            concat!($prefix, "1", $suffix),
            concat!($prefix, "2", $suffix),
            concat!($prefix, "3", $suffix),
            concat!($prefix, "4", $suffix),
            concat!($prefix, "5", $suffix),
            concat!($prefix, "6", $suffix),
            concat!($prefix, "7", $suffix),
            concat!($prefix, "8", $suffix),
            concat!($prefix, "9", $suffix),
            concat!($prefix, "10", $suffix),
            concat!($prefix, "11", $suffix),
            concat!($prefix, "12", $suffix),
            concat!($prefix, "13", $suffix),
            concat!($prefix, "14", $suffix),
        ]
    };
}

pub(crate) use names15;

/// Declares a PM attribute; see the module documentation. `per port` in
/// place of `in [u8; SIZE]`: a PM attribute of one port, its data area the
/// MAD's, starting with PortSelect (8:8) and CounterSelect (16:16).
macro_rules! pm_attr {
    (
        $(#[$meta:meta])*
        pub struct $name:ident per port, fields $fenum:ident, table $table:ident {
            $($fields:tt)*
        }
    ) => {
        pm_attr! {
            $(#[$meta])*
            pub struct $name in [u8; $crate::pm::mad::DATA_SIZE], fields $fenum, table $table {
                PortSelect port_select: u8 = "PortSelect" @ 8:8;
                CounterSelect counter_select: u16 = "CounterSelect" @ 16:16;
                $($fields)*
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub struct $name:ident in [u8; $size:expr], fields $fenum:ident, table $table:ident {
            $(
                $(#[$fmeta:meta])*
                $var:ident $field:ident : $ty:ty = $iba:literal @ $off:literal : $width:literal
                    $(, clear $sel:ident $bit:literal)? ;
            )*
        }
        $( bytes {
            $( $(#[$bmeta:meta])* $bfield:ident : [u8; $blen:literal] = $biba:literal @ $boff:literal ; )*
        } )?
        $( arrays {
            $( $(#[$ameta:meta])* $afield:ident : [$aty:ty; $alen:expr] = $atable:expr ; )*
        } )?
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
            $($( $(#[$bmeta])* pub $bfield: [u8; $blen], )*)?
            $($( $(#[$ameta])* pub $afield: [$aty; $alen], )*)?
        }

        /// The scalar fields of the attribute, in wire order.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $fenum {
            $( $var, )*
        }

        impl $fenum {
            /// Every scalar field, in wire order.
            pub const ALL: &'static [$fenum] = &[ $( $fenum::$var, )* ];

            /// The field's layout: IBTA name, bit offset, width.
            pub const fn field(self) -> $crate::pm::layout::Field {
                match self {
                    $( $fenum::$var => $crate::pm::layout::Field::new($iba, $off, $width), )*
                }
            }

            /// The IBTA name of the field.
            pub const fn name(self) -> &'static str {
                self.field().name
            }

            /// The CounterSelect/CounterSelect2 bit that clears the field.
            pub const fn clear(self) -> Option<$crate::pm::decl::ClearBit> {
                match self {
                    $( $fenum::$var => pm_attr!(@clear $($sel $bit)?), )*
                }
            }
        }

        /// Every scalar field in wire order.
        pub const $table: &[$crate::pm::layout::Field] = &[
            $( $crate::pm::layout::Field::new($iba, $off, $width), )*
        ];

        const _: () = {
            $( assert!($width <= <$ty as $crate::pm::decl::Bits>::BITS, "field wider than its type"); )*
            $crate::pm::decl::check_layout($table, $size * 8);
        };

        impl $name {
            pub fn decode(d: &[u8; $size]) -> Self {
                #[allow(unused_imports)]
                use $crate::pm::decl::Bits as _;
                $name {
                    $( $field: <$ty>::from_bits($fenum::$var.field().get(d)), )*
                    $($( $bfield: $crate::pm::layout::get_bytes(d, $boff), )*)?
                    $($( $afield: {
                        let mut a = [<$aty>::default(); $alen];
                        for (v, f) in a.iter_mut().zip($atable.iter()) {
                            *v = <$aty>::from_bits(f.get(d));
                        }
                        a
                    }, )*)?
                }
            }

            /// Writes every field (values wider than their field are
            /// truncated to it).
            pub fn encode(&self, d: &mut [u8; $size]) {
                #[allow(unused_imports)]
                use $crate::pm::decl::Bits as _;
                $( $fenum::$var.field().set(d, self.$field.to_bits()); )*
                $($( $crate::pm::layout::set_bytes(d, $boff, &self.$bfield); )*)?
                $($( for (v, f) in self.$afield.iter().zip($atable.iter()) {
                    f.set(d, v.to_bits());
                } )*)?
            }

            /// A scalar field's value.
            pub fn get(&self, f: $fenum) -> u64 {
                use $crate::pm::decl::Bits as _;
                match f {
                    $( $fenum::$var => self.$field.to_bits(), )*
                }
            }

            /// Sets a scalar field (keeping the bits its type holds).
            pub fn set(&mut self, f: $fenum, v: u64) {
                use $crate::pm::decl::Bits as _;
                match f {
                    $( $fenum::$var => self.$field = <$ty>::from_bits(v), )*
                }
            }
        }
    };
    (@clear) => { None };
    (@clear cs $bit:literal) => { Some($crate::pm::decl::ClearBit::Select($bit)) };
    (@clear cs2 $bit:literal) => { Some($crate::pm::decl::ClearBit::Select2($bit)) };
}
