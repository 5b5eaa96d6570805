//! Bit-field access with IBTA numbering: bit 0 is the most significant bit of
//! byte 0, values are big-endian. Every accessor is bounds checked and never
//! panics: reads outside the buffer give 0, writes outside it do nothing and
//! report `false`.

/// One field of an attribute: its IBTA name, bit offset into the attribute
/// data and width in bits (1..=64; wider fields such as GIDs are read with
/// [`get_bytes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub offset: usize,
    pub width: usize,
}

impl Field {
    pub const fn new(name: &'static str, offset: usize, width: usize) -> Field {
        Field {
            name,
            offset,
            width,
        }
    }

    /// Reads the field (0 when it does not fit in `data`).
    pub fn get(&self, data: &[u8]) -> u64 {
        get_bits(data, self.offset, self.width)
    }

    /// Writes `value` truncated to the field's width.
    pub fn set(&self, data: &mut [u8], value: u64) -> bool {
        set_bits(data, self.offset, self.width, value)
    }

    /// The largest value the field holds.
    pub const fn max(&self) -> u64 {
        if self.width >= 64 {
            u64::MAX
        } else {
            (1u64 << self.width) - 1
        }
    }
}

fn span(len: usize, bit_off: usize, width: usize) -> Option<(usize, usize)> {
    if width == 0 || width > 64 {
        return None;
    }
    let end_bit = bit_off.checked_add(width)?;
    let first = bit_off / 8;
    let last = end_bit.div_ceil(8); // exclusive
    if last > len {
        return None;
    }
    Some((first, last))
}

/// Reads `width` (1..=64) bits at `bit_off`; 0 when out of range.
pub fn get_bits(data: &[u8], bit_off: usize, width: usize) -> u64 {
    let Some((first, last)) = span(data.len(), bit_off, width) else {
        return 0;
    };
    let mut acc: u128 = 0;
    for &b in &data[first..last] {
        acc = (acc << 8) | u128::from(b);
    }
    let total = (last - first) * 8;
    let shift = total - (bit_off % 8) - width;
    let mask: u128 = (1u128 << width) - 1;
    ((acc >> shift) & mask) as u64
}

/// Writes the low `width` (1..=64) bits of `value` at `bit_off`; returns
/// `false` (and leaves `data` alone) when out of range.
pub fn set_bits(data: &mut [u8], bit_off: usize, width: usize, value: u64) -> bool {
    let Some((first, last)) = span(data.len(), bit_off, width) else {
        return false;
    };
    let mut acc: u128 = 0;
    for &b in &data[first..last] {
        acc = (acc << 8) | u128::from(b);
    }
    let total = (last - first) * 8;
    let shift = total - (bit_off % 8) - width;
    let mask: u128 = ((1u128 << width) - 1) << shift;
    acc = (acc & !mask) | ((u128::from(value) << shift) & mask);
    for i in (first..last).rev() {
        data[i] = (acc & 0xff) as u8;
        acc >>= 8;
    }
    true
}

/// Copies `N` whole bytes starting at byte-aligned `bit_off` (zeros when out
/// of range or unaligned).
pub fn get_bytes<const N: usize>(data: &[u8], bit_off: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if bit_off.is_multiple_of(8) {
        let start = bit_off / 8;
        if let Some(src) = start.checked_add(N).and_then(|end| data.get(start..end)) {
            out.copy_from_slice(src);
        }
    }
    out
}

/// Writes whole bytes at byte-aligned `bit_off`; `false` when out of range.
pub fn set_bytes(data: &mut [u8], bit_off: usize, bytes: &[u8]) -> bool {
    if !bit_off.is_multiple_of(8) {
        return false;
    }
    let start = bit_off / 8;
    match start
        .checked_add(bytes.len())
        .and_then(|end| data.get_mut(start..end))
    {
        Some(dst) => {
            dst.copy_from_slice(bytes);
            true
        }
        None => false,
    }
}

/// Looks a field up by name (case-insensitive) in a layout table.
pub fn find(table: &[Field], name: &str) -> Option<Field> {
    table
        .iter()
        .copied()
        .find(|f| f.name.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msb_first_numbering() {
        let d = [0b1010_0000u8, 0x00];
        assert_eq!(get_bits(&d, 0, 1), 1);
        assert_eq!(get_bits(&d, 1, 1), 0);
        assert_eq!(get_bits(&d, 2, 1), 1);
        assert_eq!(get_bits(&d, 0, 4), 0b1010);
    }

    #[test]
    fn big_endian_multibyte() {
        let d = [0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x11];
        assert_eq!(get_bits(&d, 0, 16), 0x1234);
        assert_eq!(get_bits(&d, 4, 16), 0x2345);
        assert_eq!(get_bits(&d, 0, 64), 0x1234_5678_9abc_def0);
        assert_eq!(get_bits(&d, 4, 64), 0x2345_6789_abcd_ef01);
        assert_eq!(get_bits(&d, 29, 3), 0x78 & 7);
    }

    #[test]
    fn set_then_get_every_offset_and_width() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for width in 1..=64usize {
            for off in 0..40usize {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                let mut d = [0xA5u8; 16];
                let before = d;
                let max = if width == 64 {
                    u64::MAX
                } else {
                    (1 << width) - 1
                };
                assert!(set_bits(&mut d, off, width, seed));
                assert_eq!(
                    get_bits(&d, off, width),
                    seed & max,
                    "off {off} width {width}"
                );
                // Bits outside the field are untouched.
                for bit in (0..128).filter(|b| *b < off || *b >= off + width) {
                    assert_eq!(get_bits(&d, bit, 1), get_bits(&before, bit, 1));
                }
            }
        }
    }

    #[test]
    fn out_of_range_is_harmless() {
        let mut d = [0xffu8; 4];
        assert_eq!(get_bits(&d, 30, 8), 0);
        assert_eq!(get_bits(&d, usize::MAX - 3, 8), 0);
        assert_eq!(get_bits(&d, 0, 0), 0);
        assert_eq!(get_bits(&d, 0, 65), 0);
        assert!(!set_bits(&mut d, 28, 8, 0));
        assert!(!set_bits(&mut d, usize::MAX, 1, 0));
        assert_eq!(d, [0xff; 4]);
        assert_eq!(get_bytes::<16>(&d, 0), [0; 16]);
        assert!(!set_bytes(&mut d, 8, &[0; 4]));
        assert_eq!(get_bits(&d, 24, 8), 0xff);
    }
}
