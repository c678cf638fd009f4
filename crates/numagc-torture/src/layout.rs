//! The objects torture programs build, shared by the heap builders
//! (`crate::interp`) and the shadow model (`crate::shadow`) so that the two
//! sides cannot disagree about a layout.
//!
//! Every object a program builds carries a unique id, its *oid*, so the
//! checker (`crate::check`) can compare the heap with the shadow object by
//! object and tell a shared object from two copies of it:
//! * mixed objects (`pair`, `rec`, `wide`, `cell`) and raw objects hold it in
//!   word 0, a raw word;
//! * vectors and arrays hold only values, so element 0 is the immediate
//!   integer of the id word.
//!
//! The id word is `ID_TAG | oid`, so a word that is not an id (a payload, a
//! stray pointer) is recognised as such. Sequences built by `tabulate` and
//! `par_map` (vectors or ropes of the runtime's own descriptor) carry no id;
//! their elements do.
//!
//! The random parts of a structure (which element of a vector refers to
//! what) are drawn from a seed by the *plans* below, which both sides call,
//! so that the heap and the shadow see the same structure by construction.

use crate::rng::{mix, Rng};
use numagc::{DescId, Descriptor, Runtime};

/// High bits of every id word.
pub const ID_TAG: u64 = 0x5A << 40;
const ID_MASK: u64 = (1 << 40) - 1;

/// The id word of object `oid`.
pub fn id_word(oid: u32) -> u64 {
    ID_TAG | oid as u64
}

/// The oid in an id word, if it is one.
pub fn oid_of(word: u64) -> Option<u32> {
    (word & !ID_MASK == ID_TAG)
        .then(|| u32::try_from(word & ID_MASK).ok())
        .flatten()
}

/// The raw payload word `i` of the object with id word `id`.
pub fn payload(id: u64, i: usize) -> u64 {
    mix(id ^ (i as u64).wrapping_mul(0x1000_0000_01b3))
}

/// Fields of the `wide` descriptor (more than one 64-bit pointer bitmap
/// word, and too many for the packed fast-path layout).
pub const WIDE_SIZE: usize = 70;

/// Whether field `i` of a `wide` object holds a value (else a raw word).
pub fn wide_is_value(i: usize) -> bool {
    i % 3 == 1
}

/// Fields of the `mid` descriptor: the largest object the compiled-code
/// interface allocates inline (`numagc::compiled::MAX_SMALL_FIELDS`), with
/// the `wide` layout (values where [`wide_is_value`]).
pub const MID_SIZE: usize = numagc::compiled::MAX_SMALL_FIELDS;

/// Field layout of a `rec`: raw id, value, raw, value, raw.
pub const REC_VALUES: [usize; 2] = [1, 3];

/// The kind of an object, as both sides name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Immutable mixed `[raw id, value, value]`: lists, trees, DAG nodes.
    Pair,
    /// Immutable mixed with interleaved raw and value fields.
    Rec,
    /// Immutable mixed of [`WIDE_SIZE`] fields.
    Wide,
    /// Immutable mixed of [`MID_SIZE`] fields, the `wide` layout.
    Mid,
    /// Mutable mixed `[raw id, value, raw]` (allocated in the global heap).
    Cell,
    /// Immutable vector, element 0 the id.
    Vector,
    /// Mutable array, element 0 the id.
    Array,
    /// Raw data, word 0 the id.
    Raw,
    /// A parallel sequence (vector or rope) of `tabulate` / `par_map`.
    Seq,
}

/// The descriptors a torture runtime registers.
#[derive(Clone, Copy, Debug)]
pub struct Descs {
    pub pair: DescId,
    pub rec: DescId,
    pub wide: DescId,
    pub mid: DescId,
    pub cell: DescId,
}

impl Descs {
    pub fn register(rt: &Runtime) -> numagc::Result<Descs> {
        let wide_values: Vec<usize> = (0..WIDE_SIZE).filter(|&i| wide_is_value(i)).collect();
        let mid_values: Vec<usize> = (0..MID_SIZE).filter(|&i| wide_is_value(i)).collect();
        Ok(Descs {
            pair: rt.register(Descriptor::mixed("torture.pair", 3, &[1, 2])?)?,
            rec: rt.register(Descriptor::mixed("torture.rec", 5, &REC_VALUES)?)?,
            wide: rt.register(Descriptor::mixed("torture.wide", WIDE_SIZE, &wide_values)?)?,
            mid: rt.register(Descriptor::mixed("torture.mid", MID_SIZE, &mid_values)?)?,
            cell: rt.register(Descriptor::mixed("torture.cell", 3, &[1])?.mutable())?,
        })
    }

    /// The kind of a mixed object of descriptor `d`, `None` for a
    /// descriptor that is not one of these (a rope node).
    pub fn kind_of(&self, d: DescId) -> Option<Kind> {
        self.kind_of_id(d.id())
    }

    /// [`Descs::kind_of`] by the header's raw id (compiled code reads
    /// headers, not descriptors).
    pub fn kind_of_id(&self, id: u16) -> Option<Kind> {
        [
            (self.pair, Kind::Pair),
            (self.rec, Kind::Rec),
            (self.wide, Kind::Wide),
            (self.mid, Kind::Mid),
            (self.cell, Kind::Cell),
        ]
        .into_iter()
        .find(|&(x, _)| x.id() == id)
        .map(|(_, k)| k)
    }

    /// The header id of the objects of `kind` (`None` for sequences).
    pub fn header_id(&self, kind: Kind) -> Option<u16> {
        use numagc::object::header::{ID_ARRAY, ID_RAW, ID_VECTOR};
        Some(match kind {
            Kind::Pair => self.pair.id(),
            Kind::Rec => self.rec.id(),
            Kind::Wide => self.wide.id(),
            Kind::Mid => self.mid.id(),
            Kind::Cell => self.cell.id(),
            Kind::Vector => ID_VECTOR,
            Kind::Array => ID_ARRAY,
            Kind::Raw => ID_RAW,
            Kind::Seq => return None,
        })
    }
}

/// What one value field of a planned structure holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    Int(i64),
    /// The value of source `0` or `1` of the build.
    Src(usize),
    /// The `k`-th node built before (DAGs).
    Node(usize),
    /// The `k`-th fresh pair built for this structure (shared by every
    /// element that picks it).
    Fresh(usize),
}

/// The two fields of each node of a DAG of `nodes` nodes.
pub fn dag_plan(seed: u64, nodes: usize) -> Vec<[Pick; 2]> {
    let mut r = Rng::new(seed);
    (0..nodes)
        .map(|k| {
            let mut pick = || match r.next_u64() % 4 {
                0 => Pick::Int(k as i64),
                1 => Pick::Src((r.next_u64() % 2) as usize),
                _ if k > 0 => Pick::Node((r.next_u64() % k as u64) as usize),
                _ => Pick::Int(-1),
            };
            [pick(), pick()]
        })
        .collect()
}

/// The number of fresh pairs a vector of `len` elements shares out.
pub fn fresh_count(len: usize) -> usize {
    (len / 4).min(8)
}

/// The elements `1..len` of a vector (element 0 is the id): integers,
/// sources, and fresh pairs when `fresh` is true.
pub fn elem_plan(seed: u64, len: usize, fresh: bool) -> Vec<Pick> {
    let mut r = Rng::new(seed);
    let nfresh = if fresh { fresh_count(len) } else { 0 };
    (1..len)
        .map(|k| match r.next_u64() % 5 {
            0 | 1 => Pick::Int(k as i64),
            2 | 3 => Pick::Src((r.next_u64() % 2) as usize),
            _ if nfresh > 0 => Pick::Fresh((r.next_u64() % nfresh as u64) as usize),
            _ => Pick::Int(-(k as i64)),
        })
        .collect()
}

/// Which field of an array of `len` fields (id at 0) a store with
/// `index` writes: never the id.
pub fn array_store_index(len: usize, index: u32) -> Option<usize> {
    (len >= 2).then(|| 1 + index as usize % (len - 1))
}

/// The value field of a cell.
pub const CELL_VALUE: usize = 1;
/// The raw field of a cell that `StoreRaw` writes.
pub const CELL_RAW: usize = 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_words_round_trip_and_reject_payloads() {
        assert_eq!(oid_of(id_word(0)), Some(0));
        assert_eq!(oid_of(id_word(u32::MAX)), Some(u32::MAX));
        assert_eq!(oid_of(payload(id_word(3), 1)), None);
        assert_eq!(oid_of(0), None);
        // The id word is an immediate integer when stored in a vector.
        assert!(id_word(u32::MAX) < 1 << 62);
    }

    #[test]
    fn plans_are_pure_functions_of_the_seed() {
        assert_eq!(dag_plan(9, 30), dag_plan(9, 30));
        assert_eq!(elem_plan(9, 30, true), elem_plan(9, 30, true));
        assert!(dag_plan(1, 40)
            .iter()
            .flatten()
            .any(|p| matches!(p, Pick::Node(_))));
        assert!(elem_plan(1, 40, true)
            .iter()
            .any(|p| matches!(p, Pick::Fresh(_))));
        assert!(!elem_plan(1, 40, false)
            .iter()
            .any(|p| matches!(p, Pick::Fresh(_))));
    }
}
