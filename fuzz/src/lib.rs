//! The interpreters of numagc's fuzz targets, independent of libFuzzer.
//!
//! Each target is one function from bytes to a run of the runtime's public
//! surface: [`config::run`] (settings by name, typed setters, the
//! `NUMAGC_*` environment path, size parsing, synthetic topologies),
//! [`descriptor::run`] (descriptor validation, registration, and objects of
//! the accepted descriptors) and [`capi::run`] (sequences of C ABI calls).
//! Every call must return a value or an error; a panic, an abort, a hang or
//! a broken invariant (checked with `assert!`) is a finding. The
//! `fuzz_targets/` binaries hand libFuzzer's inputs to these functions, and
//! `tests/replay.rs` replays seeded inputs through them in normal CI.
//!
//! Inputs are read with [`Input`], which never fails: past the end every
//! read returns zeros, so any byte string is a valid program, and each
//! interpreter bounds its number of operations and the sizes it asks for,
//! so every input runs in milliseconds.

#![warn(clippy::undocumented_unsafe_blocks)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod capi;
pub mod config;
pub mod descriptor;

/// A reader of fuzz bytes that never fails (zeros past the end).
pub struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data, pos: 0 }
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    pub fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// True one time in `n` (for bytes spread evenly).
    pub fn one_in(&mut self, n: u8) -> bool {
        self.u8().is_multiple_of(n)
    }

    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    pub fn u64(&mut self) -> u64 {
        (self.u32() as u64) | ((self.u32() as u64) << 32)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        let x = if n <= 256 { self.u8() as usize } else if n <= 65536 { self.u16() as usize } else { self.u64() as usize };
        x % n
    }

    /// One of `items` (which must not be empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// Up to `max` raw bytes (the count is read first).
    pub fn bytes(&mut self, max: usize) -> &'a [u8] {
        let n = self.below(max + 1);
        let start = self.pos.min(self.data.len());
        let end = (start + n).min(self.data.len());
        self.pos += n;
        &self.data[start..end]
    }

    /// Up to `max` bytes as text (invalid UTF-8 replaced).
    pub fn text(&mut self, max: usize) -> String {
        String::from_utf8_lossy(self.bytes(max)).into_owned()
    }

    /// A size in bytes that is often interesting: a small value, a power of
    /// two or its neighbour, or anything.
    pub fn size(&mut self) -> usize {
        match self.u8() % 4 {
            0 => self.below(1 << 16),
            1 | 2 => {
                let p = 1usize.checked_shl(self.below(64) as u32).unwrap_or(0);
                match self.u8() % 3 {
                    0 => p,
                    1 => p.wrapping_sub(1),
                    _ => p.wrapping_add(1),
                }
            }
            _ => self.u64() as usize,
        }
    }
}

/// A small pseudo-random generator for the replay tests (splitmix64).
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `len` pseudo-random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}
