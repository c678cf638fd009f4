//! The 64-bit object header of §3.2, Figure 1.
//!
//! ```text
//!  63                              16 15            1  0
//! +----------------------------------+---------------+---+
//! |     length in words (48 bits)    |  ID (15 bits) | 1 |
//! +----------------------------------+---------------+---+
//! ```
//!
//! Invariant: bit 0 of a header is always 1. A word in header position whose
//! bit 0 is 0 is a forwarding pointer left by a copying collection, so the two
//! can never be confused. The length counts the words after the header.

/// ID of raw-data objects: no field is scanned.
pub const ID_RAW: u16 = 0;
/// ID of immutable vectors of values: every field is a value.
pub const ID_VECTOR: u16 = 1;
/// ID of mutable arrays of values. They live in the global heap (§2.3 extended
/// to mutation, see `crate::mutator`); every field is a value.
pub const ID_ARRAY: u16 = 2;
/// The first ID handed to embedder descriptors (mixed objects).
pub const FIRST_MIXED_ID: u16 = 3;
/// One past the largest ID: the ID field has 15 bits.
pub const ID_LIMIT: u32 = 1 << 15;
/// ID of the runtime's own rope nodes (the interior nodes of parallel
/// sequences, `crate::mutator::tabulate`): the largest ID, reserved, so that
/// embedder descriptors, which count up from [`FIRST_MIXED_ID`], never get
/// it. Its descriptor is registered when the table is created, so the
/// collectors and the verifier scan rope nodes like any mixed object.
pub const ID_ROPE: u16 = (ID_LIMIT - 1) as u16;
/// ID of the runtime's ephemerons and weak references (`crate::weak`): the
/// second largest ID, reserved like [`ID_ROPE`]. Its descriptor declares no
/// value field, so no collector traces an ephemeron's key and data as
/// ordinary fields: the plan's weak processing (`crate::weak::process`)
/// decides what they keep alive and clears them.
pub const ID_EPHEMERON: u16 = (ID_LIMIT - 2) as u16;
/// ID of a PE's FetchMes (`crate::pe::global`): the local name
/// of an object another PE owns, reserved like [`ID_ROPE`] so that every
/// runtime of a group knows it by the same ID. Two raw fields (the owner
/// PE and the id in its global indirection table) and the remote object's
/// header word; no value field.
pub const ID_FETCHME: u16 = (ID_LIMIT - 3) as u16;
/// The largest length the 48-bit field can hold, in words.
pub const MAX_LENGTH: u64 = (1 << 48) - 1;

/// A decoded header word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header(u64);

impl Header {
    /// Builds a header; `id < ID_LIMIT` and `len <= MAX_LENGTH` are checked by
    /// the callers (allocation validates lengths, the descriptor table IDs).
    #[inline(always)]
    pub const fn new(id: u16, len_words: u64) -> Header {
        Header((len_words << 16) | ((id as u64) << 1) | 1)
    }

    /// Interprets a word found in header position; `None` when it is a
    /// forwarding pointer (bit 0 clear).
    #[inline(always)]
    pub const fn decode(word: u64) -> Option<Header> {
        if word & 1 == 1 {
            Some(Header(word))
        } else {
            None
        }
    }

    #[inline(always)]
    pub const fn id(self) -> u16 {
        ((self.0 >> 1) & 0x7fff) as u16
    }

    /// Length in words, not counting the header.
    #[inline(always)]
    pub const fn len(self) -> usize {
        (self.0 >> 16) as usize
    }

    #[inline(always)]
    pub const fn is_empty(self) -> bool {
        self.len() == 0
    }

    #[inline(always)]
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Size of the whole object in bytes, header included.
    #[inline(always)]
    pub const fn size_bytes(self) -> usize {
        (self.len() + 1) * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_tag_bit() {
        for &(id, len) in &[(0u16, 0u64), (1, 5), (2, 1 << 20), (0x7fff, MAX_LENGTH)] {
            let h = Header::new(id, len);
            assert_eq!(h.bits() & 1, 1, "bit 0 of a header is 1");
            let d = Header::decode(h.bits()).unwrap();
            assert_eq!(d.id(), id);
            assert_eq!(d.len() as u64, len);
        }
        // An 8-aligned address decodes as a forwarding pointer.
        assert_eq!(Header::decode(0x7f00_0000_1000), None);
    }
}
