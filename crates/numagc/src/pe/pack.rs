//! Packing: an immutable object graph of one runtime as a portable packet
//! of `u64` words, for another runtime's heap (`super::unpack`).
//!
//! This is the packing of GUM (`gumsmp-shared-distributed-heaps.txt`,
//! §2.1): work and data move between PEs — runtime instances that share no
//! heap — as packed graphs, copied into the receiver's heap on arrival.
//! Only immutable objects are copied: a copy of a mutable object would be a
//! second object whose stores the first never sees. Within a PE group
//! ([`pack_in`] with the PE's context), mutable objects (arrays, mixed
//! objects of a mutable descriptor) travel as global addresses (GAs, §2.1,
//! `super::global`), and so does a FetchMe, as the GA it stands for. Outside
//! one ([`pack`]) they are refused with [`ErrorKind::NotExportable`], as
//! ephemerons and weak references always are (their key and data are not
//! fields: the receiver could not keep them weak), and anything else it
//! does not know how to carry. Rope
//! nodes (`crate::mutator::tabulate`) are immutable mixed objects of the
//! built-in descriptor `ID_ROPE`, which every runtime registers at the same
//! id, so they travel like any mixed object.
//!
//! # Format
//!
//! ```text
//! word 0          v: number of values
//! word 1          n: number of objects
//! word 2          d: number of descriptor entries
//! n objects       tag word, then the object's fields
//! v words         the values, encoded as value fields
//! 2 words × d     (descriptor id, fingerprint)
//! ```
//!
//! The descriptor table comes last so that the packer writes each object
//! once, where it lies in the packet, and learns the table only at the
//! end; the receiver reads it first, from the packet's last `2 d` words.
//!
//! * A *fingerprint* is the descriptor's size in fields in bits 32..64 and,
//!   in bits 0..32, the FNV-1a hash (64-bit, folded) of its mutability flag
//!   and its pointer offsets: a receiver whose descriptor of that id has
//!   another layout refuses the packet.
//! * A *tag word* holds the kind in bits 0..2 (0 raw, 1 vector, 2 mixed,
//!   3 global address), zero in bits 2..8, the descriptor id in bits 8..24
//!   (mixed objects only; zero otherwise) and the field count in bits
//!   24..64.
//! * A *global address* has four fields: the owner PE, the id in its GIT,
//!   the weight it carries (below 2^32, not 0) and the header word of the
//!   object it names. The receiver makes it its one FetchMe of that GA, or
//!   its own object when it is the owner.
//! * The fields of a raw object, and the raw fields of a mixed object, are
//!   the words themselves. A *value field* (every field of a vector, the
//!   value fields of a mixed object) and each of the `v` values is an odd
//!   word — the immediate itself (`crate::object::int_value`) — or an even
//!   word `k << 1`, a reference to the `k`-th object of the packet.
//!
//! # Invariants
//!
//! * A reference names any object of the packet but its own: objects
//!   form a DAG (a cycle cannot be built of immutable objects; the
//!   receiver refuses one), in an order of the sender's choosing. [`pack`]
//!   writes them breadth first from the values (objects `0..` are the
//!   values' own), so in a tree every reference names a later object; the
//!   receiver builds in reverse packet order when every reference names a
//!   later object, in packet order when every one names an earlier one,
//!   and sorts the objects otherwise (`super::unpack`).
//! * Sharing is kept: an object reachable twice is packed once, and every
//!   reference to it names the same index.
//! * Every mixed object's descriptor is listed once in the table, with the
//!   sender's fingerprint, and its field count is the descriptor's size.
//! * [`pack`] keeps the objects still to copy in a queue (lists of
//!   millions of cells are fine) and stops at the first object past
//!   `limit_words`.
//!
//! # Why breadth first, with a lookahead
//!
//! Packing a graph larger than the caches is a walk of memory the walker
//! learns as it goes: depth first, each object's address comes from the
//! object before it, one cache miss after another. Breadth first, the
//! objects to copy next are known many at a time (the paper does not say
//! in which order GUM packs; this is numagc's choice, for the cache). The packer copies object `k + LOOKAHEAD` while it
//! encodes the value fields of object `k`, and when it copies an object it
//! asks for the headers of the objects that object names
//! (`crate::heap::prefetch::for_read`): by the time the encoding reads
//! them, they are on their way. A copying collector lays a structure out
//! breadth first too, so the copies read memory mostly in order.
//! Measured with `numagc micro pack` (`docs/results/hybrid.md`).
//!
//! The side table of visited objects is a bit per heap word until an
//! object is met twice ([`AddressIndex`]): a tree, the common case, never
//! pays for a table of indices.

use super::address_index::AddressIndex;
use super::global::GaUndo;
use super::group::PeContext;
pub use super::unpack::unpack;
pub(crate) use super::unpack::unpack_in;
use super::weight::GlobalAddress;
use crate::error::{Error, ErrorKind, Result};
use crate::heap::prefetch;
use crate::object::descriptor::{DescId, Descriptor, DescriptorTable};
use crate::object::header::{FIRST_MIXED_ID, ID_EPHEMERON, ID_FETCHME};
use crate::{Handle, ObjectKind, Scope, View};

/// Words before the objects: `v`, `n`, `d`.
pub(super) const HEADER_WORDS: usize = 3;
pub(super) const KIND_RAW: u64 = 0;
pub(super) const KIND_VECTOR: u64 = 1;
pub(super) const KIND_MIXED: u64 = 2;
pub(super) const KIND_GLOBAL: u64 = 3;
/// Fields of a global address: PE, id, weight, header.
pub(super) const GLOBAL_FIELDS: usize = 4;
/// Bits 0..8 of a tag: the kind and the reserved bits that must be zero.
pub(super) const KIND_BITS: u64 = 0xff;
pub(super) const ID_SHIFT: u32 = 8;
pub(super) const COUNT_SHIFT: u32 = 24;
/// The largest field count a tag word holds (40 bits).
pub(super) const MAX_COUNT: u64 = (1 << (64 - COUNT_SHIFT)) - 1;

/// A tag word (see the module doc).
pub(super) fn tag(kind: u64, id: u16, count: u64) -> u64 {
    kind | (u64::from(id) << ID_SHIFT) | (count << COUNT_SHIFT)
}

/// The layout fingerprint of a descriptor (see the module doc).
pub(super) fn fingerprint(d: &Descriptor) -> u64 {
    const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
    let eat = |h: u64, b: u8| (h ^ u64::from(b)).wrapping_mul(FNV_PRIME);
    let mut h = eat(FNV_OFFSET, u8::from(d.is_mutable()));
    for &off in d.pointer_offsets() {
        h = off.to_le_bytes().into_iter().fold(h, eat);
    }
    ((d.size() as u64) << 32) | ((h ^ (h >> 32)) & 0xffff_ffff)
}

fn not_exportable(message: String) -> Error {
    ErrorKind::NotExportable(message).into()
}

/// How [`Packer::copy`] found an object to travel, before it is written
/// out.
#[derive(Clone, Copy)]
enum Shape<'d> {
    Raw,
    Vector,
    Mixed(u16, &'d Descriptor),
    /// Travels as this GA; the header word of the object it names.
    Global(GlobalAddress, u64),
}

/// The value fields of an object copied by [`Packer::copy_other`].
#[derive(Clone, Copy)]
enum Walk<'d> {
    /// No value fields (a raw object).
    None,
    /// Fields `next..len` (a vector).
    All { next: usize, len: usize },
    /// Fields `offsets[next..]` (a mixed object of a large descriptor).
    Offsets { offsets: &'d [u32], next: usize },
}

impl Walk<'_> {
    #[inline]
    fn next(&mut self) -> Option<usize> {
        match self {
            Walk::None => None,
            Walk::All { next, len } => {
                let f = *next;
                (f < *len).then(|| {
                    *next += 1;
                    f
                })
            }
            Walk::Offsets { offsets, next } => {
                let f = *offsets.get(*next)? as usize;
                *next += 1;
                Some(f)
            }
        }
    }
}

/// A small mixed object copied into the packet whose value fields are
/// still to be encoded: its fields start at word `at` of the packet, its
/// value fields are the set bits of `mask`.
#[derive(Clone, Copy)]
struct Copied {
    at: usize,
    mask: u32,
}

/// The index of the object at `w` (a resolved pointer), given now, and
/// `w` added to `met`, if it is met for the first time.
#[inline(always)]
fn index_of(index: &mut AddressIndex, met: &mut Vec<u64>, w: u64) -> u64 {
    let next = met.len() as u64;
    index.index_or(w, next, met).unwrap_or_else(|| {
        met.push(w);
        next
    })
}

/// Copies `words` into `out` (of the same length): the small lengths of
/// most objects as plain moves, longer ones with `memcpy` (whose call
/// costs more than the copy of a few words).
#[inline(always)]
fn copy_small(out: &mut [std::mem::MaybeUninit<u64>], words: &[u64]) {
    match (out, words) {
        ([o0], [w0]) => {
            o0.write(*w0);
        }
        ([o0, o1], [w0, w1]) => {
            o0.write(*w0);
            o1.write(*w1);
        }
        ([o0, o1, o2], [w0, w1, w2]) => {
            o0.write(*w0);
            o1.write(*w1);
            o2.write(*w2);
        }
        ([o0, o1, o2, o3], [w0, w1, w2, w3]) => {
            o0.write(*w0);
            o1.write(*w1);
            o2.write(*w2);
            o3.write(*w3);
        }
        (out, words) => {
            out.write_copy_of_slice(words);
        }
    }
}

/// How many objects the copying runs ahead of the encoding of value
/// fields, so that the objects a copied object names are on their way
/// into the cache (prefetched when it is copied) before the encoding
/// reads their headers. A breadth-first walk has that many objects known
/// ahead of it whenever the graph is wider than that.
const LOOKAHEAD: usize = 16;

/// Entries of [`Packer::copied`], a ring: above `LOOKAHEAD`, a power of
/// two.
const COPIED_RING: usize = 32;
const _: () = assert!(COPIED_RING > LOOKAHEAD && COPIED_RING.is_power_of_two());

/// What a packing within a PE group needs for global addresses.
struct Globals<'c> {
    ctx: &'c PeContext,
    shared: &'c crate::vproc::Shared,
    undo: GaUndo,
    /// Past this many words, an immutable object below the roots travels
    /// as a GA.
    soft_limit: usize,
    /// Every object among the values travels as a GA.
    roots_global: bool,
}

/// Why a packing failed, for [`pack_in`]'s retries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Failure {
    Other,
    /// Past the hard limit.
    TooBig,
    /// An object to send as a GA is in a private heap: the values are to
    /// be promoted first.
    Private,
}

struct Packer<'d, 'c> {
    descs: &'d DescriptorTable,
    globals: Option<Globals<'c>>,
    /// Whether an address is in the packing vproc's private heap.
    is_private: &'c dyn Fn(u64) -> bool,
    failure: Failure,
    index: AddressIndex,
    /// The address of every object met, in the order of their indices.
    met: Vec<u64>,
    /// Objects `0..roots` are the values' own.
    roots: usize,
    /// The values, encoded.
    values: Vec<u64>,
    /// The objects copied and not yet encoded: object `k`'s at
    /// `k % COPIED_RING` (at most `LOOKAHEAD + 1` are).
    copied: [Copied; COPIED_RING],
    /// The descriptor table of the packet, in order of first use.
    table: Vec<(u16, u64)>,
    /// The last descriptor id found in `table`.
    listed: u16,
    /// The packet: the header (filled in at the end), then the objects.
    body: Vec<u64>,
    /// Words the packet will have with every object copied so far.
    words: usize,
    limit: usize,
}

impl<'d> Packer<'d, '_> {
    fn charge(&mut self, words: usize) -> Result<()> {
        self.words = self.words.saturating_add(words);
        if self.words > self.limit {
            self.failure = Failure::TooBig;
            return Err(not_exportable(format!(
                "graph larger than the packet limit of {} words",
                self.limit
            )));
        }
        Ok(())
    }

    /// Whether an immutable object of `len` fields, a value's own
    /// (`root`) or below one, travels as a GA rather than copied: within a
    /// group, when the roots are to be GAs, or when it would take the
    /// packet past its soft limit (a root packed whole never does).
    #[inline]
    fn as_global(&self, len: usize, root: bool) -> bool {
        let Some(g) = self.globals.as_ref() else {
            return false;
        };
        if root {
            return g.roots_global;
        }
        self.words.saturating_add(len).saturating_add(1) > g.soft_limit
    }

    /// Lists descriptor `id` (registered) in the packet's table, once.
    #[inline(always)]
    fn list(&mut self, id: u16) -> Result<()> {
        if id == self.listed {
            return Ok(());
        }
        self.list_other(id)
    }

    /// [`Self::list`] of another descriptor than the last one listed.
    #[cold]
    #[inline(never)]
    fn list_other(&mut self, id: u16) -> Result<()> {
        if !self.table.iter().any(|&(t, _)| t == id) {
            self.charge(2)?;
            let d = self
                .descs
                .get(id)
                .expect("a listed descriptor is registered");
            self.table.push((id, fingerprint(d)));
        }
        self.listed = id;
        Ok(())
    }

    /// [`index_of`] on this packer's tables.
    #[inline(always)]
    fn index_of(&mut self, w: u64) -> u64 {
        index_of(&mut self.index, &mut self.met, w)
    }

    /// Writes out object `k` (met at `addr`): its tag and fields, or the
    /// GA it travels as, after checking that it can travel and charging
    /// its words; asks for the objects it names to come into the cache.
    #[inline]
    fn copy(&mut self, k: usize, addr: u64) -> Result<()> {
        let obj = View::new(addr, self.descs);
        let root = k < self.roots;
        // The common case first: a small immutable mixed object, copied,
        // from one header read.
        if let Some((id, layout, words)) = obj.small_immutable() {
            if id != ID_FETCHME && id != ID_EPHEMERON && !self.as_global(words.len(), root) {
                self.list(id)?;
                let len = words.len();
                self.charge(len + 1)?;
                // The tag and the words, written past the length and then
                // taken in: no check of the capacity per word.
                let at = self.body.len() + 1;
                self.body.reserve(len + 1);
                let spare = &mut self.body.spare_capacity_mut()[..len + 1];
                spare[0].write(tag(KIND_MIXED, id, len as u64));
                copy_small(&mut spare[1..], words);
                // SAFETY: the `len + 1` words past the length, within the
                // capacity reserved above, were all written just above.
                unsafe { self.body.set_len(at + len) };
                let mask = layout.pointer_mask();
                let mut m = mask;
                while m != 0 {
                    prefetch::for_read(words[m.trailing_zeros() as usize] as usize);
                    m &= m - 1;
                }
                self.copied[k % COPIED_RING] = Copied { at, mask };
                return Ok(());
            }
        }
        self.copied[k % COPIED_RING] = Copied { at: 0, mask: 0 };
        self.copy_other(obj, root)
    }

    /// [`Self::copy`] for every other object. Its value fields are
    /// encoded at once: the objects they name get their indices before
    /// those of the objects copied ahead of it, which is as good an order
    /// (every reference still names a later object).
    fn copy_other(&mut self, obj: View<'_>, root: bool) -> Result<()> {
        let past_limit = "an immutable object past the packet's limit";
        let shape = match obj.kind() {
            Some(ObjectKind::Array) => self.global(obj, &"a mutable array")?,
            Some(ObjectKind::Raw | ObjectKind::Vector) if self.as_global(obj.len(), root) => {
                self.global(obj, &past_limit)?
            }
            Some(ObjectKind::Raw) => Shape::Raw,
            Some(ObjectKind::Vector) => Shape::Vector,
            Some(ObjectKind::Mixed(id)) => self.mixed_shape(obj, id, root)?,
            None => return Err(not_exportable(format!("{obj:?} is not an object"))),
        };
        let len = obj.len();
        let (kind, id, walk) = match shape {
            Shape::Global(ga, header) => {
                self.charge(GLOBAL_FIELDS + 1)?;
                self.body.extend([
                    tag(KIND_GLOBAL, 0, GLOBAL_FIELDS as u64),
                    u64::from(ga.gid.pe),
                    ga.gid.id,
                    u64::from(ga.weight),
                    header,
                ]);
                return Ok(());
            }
            Shape::Raw => (KIND_RAW, 0, Walk::None),
            Shape::Vector => (KIND_VECTOR, 0, Walk::All { next: 0, len }),
            Shape::Mixed(id, d) => (
                KIND_MIXED,
                id,
                Walk::Offsets {
                    offsets: d.pointer_offsets(),
                    next: 0,
                },
            ),
        };
        if len as u64 > MAX_COUNT {
            return Err(not_exportable(format!(
                "an object of {len} fields (a packet carries at most {MAX_COUNT})"
            )));
        }
        let words = obj
            .immutable_words()
            .ok_or_else(|| not_exportable(format!("{obj:?} is not an immutable object")))?;
        self.charge(len.saturating_add(1))?;
        self.body.push(tag(kind, id, len as u64));
        let at = self.body.len();
        self.body.extend_from_slice(words);
        self.encode_walk(at, walk);
        Ok(())
    }

    /// The GA `obj` travels as, within a group; outside one, an error.
    fn global(&mut self, obj: View<'_>, what: &dyn std::fmt::Display) -> Result<Shape<'d>> {
        let private = (self.is_private)(obj.identity());
        if private && self.globals.is_some() {
            // The wrapper promotes the values and packs again.
            self.failure = Failure::Private;
        }
        let Some(g) = self.globals.as_mut() else {
            return Err(not_exportable(format!(
                "{what}: mutable objects travel only as global addresses, between the PEs of a \
                 group"
            )));
        };
        let (ga, header) = g.ctx.export_global(g.shared, obj, private, &mut g.undo)?;
        Ok(Shape::Global(ga, header))
    }

    /// How a mixed object travels: a FetchMe or an object of a mutable
    /// descriptor as a GA, an immutable one copied (or as a GA past the
    /// soft limit); `root`: it is one of the values' own.
    fn mixed_shape(&mut self, obj: View<'_>, id: DescId, root: bool) -> Result<Shape<'d>> {
        let id = id.id();
        if id == ID_FETCHME {
            return self.global(obj, &"a FetchMe (the name of another PE's object)");
        }
        if id == ID_EPHEMERON {
            return Err(not_exportable(
                "an ephemeron or weak reference (numagc.ephemeron): its key and data are not \
                 fields, and a copy could not keep them weak"
                    .into(),
            ));
        }
        let d = match self.descs.get(id) {
            Some(d) if id >= FIRST_MIXED_ID => d,
            _ => {
                return Err(not_exportable(format!(
                    "an object of unknown kind (id {id})"
                )))
            }
        };
        if d.is_mutable() {
            return self.global(
                obj,
                &format_args!(
                    "an object of the mutable descriptor `{}` (id {id})",
                    d.name()
                ),
            );
        }
        if self.as_global(obj.len(), root) {
            return self.global(obj, &"an immutable object past the packet's limit");
        }
        self.list(id)?;
        Ok(Shape::Mixed(id, d))
    }

    /// Replaces the value fields of copied object `k` by their encodings,
    /// giving an index to each object met for the first time.
    #[inline(always)]
    fn encode(&mut self, k: usize) {
        let Copied { at, mut mask } = self.copied[k % COPIED_RING];
        if mask == 0 {
            return;
        }
        let Packer {
            body, index, met, ..
        } = self;
        let fields = &mut body[at..];
        while mask != 0 {
            let field = &mut fields[mask.trailing_zeros() as usize];
            mask &= mask - 1;
            let w = crate::mutator::resolve(*field);
            if crate::object::is_pointer(w) {
                *field = index_of(index, met, w) << 1;
            }
        }
    }

    /// [`Self::encode`] of the value fields `walk` names, of an object
    /// whose fields start at word `at`.
    fn encode_walk(&mut self, at: usize, mut walk: Walk<'_>) {
        while let Some(f) = walk.next() {
            let w = crate::mutator::resolve(self.body[at + f]);
            if crate::object::is_pointer(w) {
                self.body[at + f] = self.index_of(w) << 1;
            }
        }
    }

    /// Packs every object reachable from `roots`, breadth first: object
    /// `k` is copied when the encoding has reached `k - LOOKAHEAD`.
    fn pack_from(&mut self, roots: &[View<'_>]) -> Result<()> {
        for &root in roots {
            let w = crate::mutator::resolve(root.identity());
            let e = if crate::object::is_pointer(w) {
                self.index_of(w) << 1
            } else {
                w
            };
            self.values.push(e);
        }
        self.roots = self.met.len();
        let mut copied = 0;
        let mut encoded = 0;
        while encoded < self.met.len() {
            while copied < self.met.len() && copied <= encoded + LOOKAHEAD {
                if let Some(&ahead) = self.met.get(copied + LOOKAHEAD) {
                    prefetch::for_read(ahead as usize);
                }
                self.copy(copied, self.met[copied])?;
                copied += 1;
            }
            self.encode(encoded);
            encoded += 1;
        }
        Ok(())
    }
}

/// Packs the graphs reachable from `values` (immediates and objects).
///
/// Errors: [`ErrorKind::NotExportable`] for a mutable object, an ephemeron
/// or an object of unknown kind anywhere in the graphs, and for a packet
/// that would exceed `limit_words`.
pub fn pack(s: &Scope<'_>, values: &[Handle<'_>], limit_words: usize) -> Result<Vec<u64>> {
    pack_core(s, values, limit_words, None, Vec::new()).map_err(|(e, _)| e)
}

/// [`pack`] into `out`, which it replaces (its memory is reused: a caller
/// that packs again and again does not ask the system for fresh pages
/// each time). On an error `out` is left empty.
pub fn pack_into(
    s: &Scope<'_>,
    values: &[Handle<'_>],
    limit_words: usize,
    out: &mut Vec<u64>,
) -> Result<()> {
    let buf = std::mem::take(out);
    *out = pack_core(s, values, limit_words, None, buf).map_err(|(e, _)| e)?;
    Ok(())
}

/// How [`pack_in`] packs within a group.
#[derive(Clone, Copy)]
pub(crate) enum Packing {
    /// A task's arguments or result: at most `limit` words; past three
    /// quarters of it, immutable objects travel as GAs, and when even so
    /// the graph does not fit, every value travels as a GA.
    Task { limit: usize },
    /// The answer to a read or a fetch: each value's own object is copied
    /// whole, however large (up to `MAX_ANSWER_WORDS`); below it, past
    /// `limit` words, immutable objects travel as GAs.
    Answer { limit: usize },
}

/// The largest answer to a read or a fetch, in words (1 GiB).
pub(crate) const MAX_ANSWER_WORDS: usize = 1 << 27;

/// [`pack`] on a PE of a group (`ctx`): mutable objects and FetchMes
/// travel as global addresses, and so do immutable objects past the
/// limits of `how`. On the split plan, an object that is to travel as a GA
/// but lies in the vproc's local heap makes it promote the values and pack
/// again. A packing that fails gives back every weight it took.
///
/// Errors: [`ErrorKind::NotExportable`] for an ephemeron or an object of
/// unknown kind, or an answer past `MAX_ANSWER_WORDS`; the promotion's.
pub(crate) fn pack_in(
    s: &mut Scope<'_>,
    values: &[Handle<'_>],
    how: Packing,
    ctx: &PeContext,
) -> Result<Vec<u64>> {
    let (mut soft, hard) = match how {
        Packing::Task { limit } => (limit - limit / 4, limit),
        Packing::Answer { limit } => (limit, MAX_ANSWER_WORDS),
    };
    let mut roots_global = false;
    let mut promoted: Option<Vec<Handle<'_>>> = None;
    loop {
        let vals = promoted.as_deref().unwrap_or(values);
        match pack_core(s, vals, hard, Some((ctx, soft, roots_global)), Vec::new()) {
            Ok(p) => return Ok(p),
            Err((_, Failure::Private)) if promoted.is_none() => {
                let mut ps = Vec::with_capacity(values.len());
                for &h in values {
                    ps.push(s.promote(h)?);
                }
                promoted = Some(ps);
            }
            Err((_, Failure::TooBig)) if matches!(how, Packing::Task { .. }) && !roots_global => {
                roots_global = true;
                soft = 0;
            }
            Err((e, _)) => return Err(e),
        }
    }
}

/// One packing into `body`; a failure says why, and has given its weight
/// back.
fn pack_core(
    s: &Scope<'_>,
    values: &[Handle<'_>],
    limit_words: usize,
    group: Option<(&PeContext, usize, bool)>,
    mut body: Vec<u64>,
) -> std::result::Result<Vec<u64>, (Error, Failure)> {
    body.clear();
    body.extend([0; HEADER_WORDS]);
    let shared = s.shared();
    let is_private = |w: u64| s.is_private(w);
    let mut p = Packer {
        descs: &shared.descs,
        globals: group.map(|(ctx, soft_limit, roots_global)| Globals {
            ctx,
            shared: &shared,
            undo: GaUndo::default(),
            soft_limit,
            roots_global,
        }),
        is_private: &is_private,
        failure: Failure::Other,
        index: AddressIndex::new(),
        met: Vec::new(),
        roots: 0,
        values: Vec::with_capacity(values.len()),
        copied: [Copied { at: 0, mask: 0 }; COPIED_RING],
        table: Vec::new(),
        listed: 0,
        body,
        words: 0,
        limit: limit_words,
    };
    let roots: Vec<View<'_>> = values.iter().map(|&h| s.view(h)).collect();
    let packed = p
        .charge(HEADER_WORDS.saturating_add(values.len()))
        .and_then(|()| p.pack_from(&roots))
        .map(|()| {
            // The values and the descriptor table follow the objects, and
            // the header is filled in: the objects are written where they
            // lie (no second buffer of the packet's size, no move).
            let mut out = std::mem::take(&mut p.body);
            out[..HEADER_WORDS].copy_from_slice(&[
                values.len() as u64,
                p.met.len() as u64,
                p.table.len() as u64,
            ]);
            out.extend_from_slice(&p.values);
            for &(id, fp) in &p.table {
                out.extend([u64::from(id), fp]);
            }
            debug_assert_eq!(out.len(), p.words);
            out
        });
    packed.map_err(|e| {
        if let Some(g) = p.globals.take() {
            g.undo.undo(g.ctx, g.shared);
        }
        (e, p.failure)
    })
}

#[cfg(all(test, not(loom)))]
#[path = "pack_tests.rs"]
mod tests;
