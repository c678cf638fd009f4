//! Packing: an immutable object graph of one runtime as a portable packet
//! of `u64` words, and its unpacking into another runtime's heap.
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
//! 2 words × d     (descriptor id, fingerprint)
//! n objects       tag word, then the object's fields
//! v words         the values, encoded as value fields
//! ```
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
//! * Objects are in post-order: an object comes after every object it
//!   references, so a reference from object `i` names a `k < i` (from the
//!   values, a `k < n`), and a receiver builds the objects in packet order.
//! * Sharing is kept: an object reachable twice is packed once, and every
//!   reference to it names the same index. A packet describes a DAG (a
//!   cycle cannot be built of immutable objects; [`pack`] checks anyway).
//! * Every mixed object's descriptor is listed once in the table, with the
//!   sender's fingerprint, and its field count is the descriptor's size.
//! * [`pack`] walks the graph with an explicit stack (lists of millions of
//!   cells are fine) and stops at the first object past `limit_words`.
//! * [`unpack`] trusts nothing: every count is checked against the packet's
//!   length before anything is allocated, every id against the receiver's
//!   table, every reference against the objects built so far; a packet
//!   that breaks a rule gives [`ErrorKind::Pe`] naming the sender and the
//!   rule ("refused packet: ..."), never a panic. Everything it builds is
//!   held by handles (one root slot per object, in a scope of its own that
//!   ends with the unpacking: a packet of more objects than the vproc has
//!   root slots left is refused), so collections during unpacking move it
//!   safely.

use super::global::{valid_header, GaUndo};
use super::group::PeContext;
use super::weight::{GlobalAddress, GlobalId};
use crate::compiled::record::ROOT_STACK_SLOTS;
use crate::error::{Error, ErrorKind, Result};
use crate::object::descriptor::{DescId, Descriptor, DescriptorTable};
use crate::object::header::{FIRST_MIXED_ID, ID_EPHEMERON, ID_FETCHME, ID_LIMIT};
use crate::object::value_int;
use crate::{Handle, ObjectKind, Scope, View};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The hash of [`AddressIndex`]'s pages: page numbers are distinct words,
/// so one multiply by an odd constant, its high bits folded down, spreads
/// them (SipHash, the default, cost a large share of the packing time).
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, w: u64) {
        let h = (self.0 ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
}

/// A packet's descriptor table: packet id → the receiver's descriptor.
type DescMap<'d> = HashMap<u16, &'d Descriptor, BuildHasherDefault<AddressHasher>>;

/// Words of the heap one page of an [`AddressIndex`] covers.
const PAGE_WORDS: usize = 512;

/// Object address → packet index (or [`VISITING`]), the packer's side
/// table: a page of `u32` entries per `PAGE_WORDS` words of heap that the
/// graph touches, found by the page's number. A graph laid out in order
/// (as allocation and copying collections lay it out) walks its pages in
/// order, so the table's accesses stay in cache; a hash map of one entry
/// per object missed the cache on every access of a large graph (`numagc
/// micro pack`: 5 times slower). An entry is 0 when absent, else the
/// value plus one. Objects are 8-byte aligned: an address's word number
/// names its entry.
#[derive(Default)]
struct AddressIndex {
    pages: HashMap<u64, Box<[u32]>, BuildHasherDefault<AddressHasher>>,
}

impl AddressIndex {
    fn split(addr: u64) -> (u64, usize) {
        let word = addr >> 3;
        (
            word / PAGE_WORDS as u64,
            (word % PAGE_WORDS as u64) as usize,
        )
    }

    fn get(&self, addr: u64) -> Option<u64> {
        let (page, at) = Self::split(addr);
        match self.pages.get(&page)?[at] {
            0 => None,
            e => Some(if e == u32::MAX {
                VISITING
            } else {
                u64::from(e - 1)
            }),
        }
    }

    fn contains(&self, addr: u64) -> bool {
        self.get(addr).is_some()
    }

    /// Sets `addr`'s entry; `v` is [`VISITING`] or an index below
    /// `u32::MAX - 1` (a packet has fewer objects than words, and at most
    /// `MAX_ANSWER_WORDS`).
    fn set(&mut self, addr: u64, v: u64) {
        let (page, at) = Self::split(addr);
        let e = if v == VISITING {
            u32::MAX
        } else {
            v as u32 + 1
        };
        self.pages
            .entry(page)
            .or_insert_with(|| vec![0u32; PAGE_WORDS].into_boxed_slice())[at] = e;
    }
}

/// Words before the descriptor table: `v`, `n`, `d`.
const HEADER_WORDS: usize = 3;
const KIND_RAW: u64 = 0;
const KIND_VECTOR: u64 = 1;
const KIND_MIXED: u64 = 2;
pub(super) const KIND_GLOBAL: u64 = 3;
/// Fields of a global address: PE, id, weight, header.
const GLOBAL_FIELDS: usize = 4;
/// Bits 0..8 of a tag: the kind and the reserved bits that must be zero.
const KIND_BITS: u64 = 0xff;
const ID_SHIFT: u32 = 8;
const COUNT_SHIFT: u32 = 24;
/// The largest field count a tag word holds (40 bits).
const MAX_COUNT: u64 = (1 << (64 - COUNT_SHIFT)) - 1;

/// A tag word (see the module doc).
pub(super) fn tag(kind: u64, id: u16, count: u64) -> u64 {
    kind | (u64::from(id) << ID_SHIFT) | (count << COUNT_SHIFT)
}

/// The layout fingerprint of a descriptor (see the module doc).
fn fingerprint(d: &Descriptor) -> u64 {
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

/// How [`pack`] reads an object's fields.
#[derive(Clone, Copy)]
enum Shape<'a> {
    Raw,
    Vector,
    Mixed(u16, &'a Descriptor),
    /// Travels as this GA; the header word of the object it names.
    Global(GlobalAddress, u64),
}

/// An object being visited: its value fields `next..` are still to visit.
struct Frame<'a, 'd> {
    obj: View<'a>,
    shape: Shape<'d>,
    /// The object's field words (`View::immutable_words`); empty for a
    /// GA, whose fields do not travel.
    words: &'a [u64],
    next: usize,
}

impl<'a> Frame<'a, '_> {
    /// The next value field to visit, if any.
    #[inline]
    fn next_child(&mut self) -> Option<View<'a>> {
        let field = match self.shape {
            Shape::Raw | Shape::Global(..) => return None,
            Shape::Vector => (self.next < self.words.len()).then_some(self.next)?,
            Shape::Mixed(_, d) => *d.pointer_offsets().get(self.next)? as usize,
        };
        self.next += 1;
        Some(self.obj.of_field_word(self.words[field]))
    }
}

/// Marks an object in [`Packer::index`] that is being visited.
const VISITING: u64 = u64::MAX;

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
    /// Object identity → packet index (or [`VISITING`]).
    index: AddressIndex,
    /// The descriptor table of the packet, in order of first use.
    table: Vec<(u16, u64)>,
    /// The objects, packed.
    body: Vec<u64>,
    objects: u64,
    /// Words the packet will have with every object discovered so far.
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

    /// Whether an immutable object of `len` fields, met at `root` level or
    /// below, travels as a GA rather than copied: within a group, when the
    /// roots are to be GAs, or when it would take the packet past its soft
    /// limit (a root packed whole never does).
    fn as_global(&self, len: usize, root: bool) -> bool {
        let Some(g) = self.globals.as_ref() else {
            return false;
        };
        if root {
            return g.roots_global;
        }
        self.words.saturating_add(len).saturating_add(1) > g.soft_limit
    }

    /// Checks that `obj` can travel, charges its words and marks it
    /// visiting; `root`: it is one of the values packed.
    fn discover<'a>(&mut self, obj: View<'a>, root: bool) -> Result<Frame<'a, 'd>> {
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
        if let Shape::Global(..) = shape {
            self.charge(GLOBAL_FIELDS + 1)?;
            self.index.set(obj.identity(), VISITING);
            return Ok(Frame {
                obj,
                shape,
                words: &[],
                next: 0,
            });
        }
        let words = obj
            .immutable_words()
            .ok_or_else(|| not_exportable(format!("{obj:?} is not an immutable object")))?;
        let len = obj.len();
        if len as u64 > MAX_COUNT {
            return Err(not_exportable(format!(
                "an object of {len} fields (a packet carries at most {MAX_COUNT})"
            )));
        }
        self.charge(len.saturating_add(1))?;
        self.index.set(obj.identity(), VISITING);
        Ok(Frame {
            obj,
            shape,
            words,
            next: 0,
        })
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
    /// soft limit); `root`: it is one of the values packed.
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
        if !self.table.iter().any(|&(t, _)| t == id) {
            self.charge(2)?;
            self.table.push((id, fingerprint(d)));
        }
        Ok(Shape::Mixed(id, d))
    }

    /// The encoding of a value word (a value field's, or a value's), whose
    /// object (if any) is packed already.
    #[inline]
    fn encode_word(&self, w: u64) -> Result<u64> {
        let w = crate::mutator::resolve(w);
        if !crate::object::is_pointer(w) {
            return Ok(w);
        }
        match self.index.get(w) {
            Some(k) if k != VISITING => Ok(k << 1),
            _ => Err(not_exportable(format!(
                "an object at {w:#x} met before it was packed"
            ))),
        }
    }

    /// Appends the object of a visited frame and gives it the next index.
    fn emit(&mut self, f: &Frame<'_, '_>) -> Result<()> {
        let (obj, len) = (f.obj, f.obj.len() as u64);
        match f.shape {
            Shape::Global(ga, header) => {
                self.body.extend([
                    tag(KIND_GLOBAL, 0, GLOBAL_FIELDS as u64),
                    u64::from(ga.gid.pe),
                    ga.gid.id,
                    u64::from(ga.weight),
                    header,
                ]);
            }
            Shape::Raw => {
                self.body.push(tag(KIND_RAW, 0, len));
                self.body.extend_from_slice(f.words);
            }
            Shape::Vector => {
                self.body.push(tag(KIND_VECTOR, 0, len));
                self.body.reserve(f.words.len());
                for &w in f.words {
                    let e = self.encode_word(w)?;
                    self.body.push(e);
                }
            }
            Shape::Mixed(id, d) => {
                // The fields as they lie, then each value field's word
                // replaced by its encoding.
                self.body.push(tag(KIND_MIXED, id, len));
                let base = self.body.len();
                self.body.extend_from_slice(f.words);
                for &off in d.pointer_offsets() {
                    let off = off as usize;
                    let e = self.encode_word(f.words[off])?;
                    self.body[base + off] = e;
                }
            }
        }
        self.index.set(obj.identity(), self.objects);
        self.objects += 1;
        Ok(())
    }

    /// Packs every object reachable from `root` that is not packed yet,
    /// in post-order.
    fn visit(&mut self, root: View<'_>) -> Result<()> {
        if root.is_int() || self.index.contains(root.identity()) {
            return Ok(());
        }
        let mut stack = vec![self.discover(root, true)?];
        while let Some(top) = stack.last_mut() {
            let Some(child) = top.next_child() else {
                let done = stack.pop().expect("the stack has a top");
                self.emit(&done)?;
                continue;
            };
            if child.is_int() {
                continue;
            }
            match self.index.get(child.identity()) {
                None => {
                    let frame = self.discover(child, false)?;
                    stack.push(frame);
                }
                Some(VISITING) => {
                    return Err(not_exportable(format!(
                        "a cycle through {child:?} (immutable objects cannot form one)"
                    )))
                }
                Some(_) => {}
            }
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
    pack_core(s, values, limit_words, None).map_err(|(e, _)| e)
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
        match pack_core(s, vals, hard, Some((ctx, soft, roots_global))) {
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

/// One packing; a failure says why, and has given its weight back.
fn pack_core(
    s: &Scope<'_>,
    values: &[Handle<'_>],
    limit_words: usize,
    group: Option<(&PeContext, usize, bool)>,
) -> std::result::Result<Vec<u64>, (Error, Failure)> {
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
        index: AddressIndex::default(),
        table: Vec::new(),
        body: Vec::new(),
        objects: 0,
        words: 0,
        limit: limit_words,
    };
    let roots: Vec<View<'_>> = values.iter().map(|&h| s.view(h)).collect();
    let packed = p
        .charge(HEADER_WORDS.saturating_add(values.len()))
        .and_then(|()| roots.iter().try_for_each(|&root| p.visit(root)))
        .and_then(|()| {
            // The header and the descriptor table go in front of the
            // objects, in the objects' buffer (no second buffer of the
            // packet's size).
            let mut prefix = Vec::with_capacity(HEADER_WORDS + 2 * p.table.len());
            prefix.extend([values.len() as u64, p.objects, p.table.len() as u64]);
            for &(id, fp) in &p.table {
                prefix.extend([u64::from(id), fp]);
            }
            let mut values_words = Vec::with_capacity(roots.len());
            for &root in &roots {
                values_words.push(p.encode_word(root.identity())?);
            }
            let mut out = std::mem::take(&mut p.body);
            out.reserve_exact(prefix.len() + values_words.len());
            out.splice(0..0, prefix);
            out.extend(values_words);
            debug_assert_eq!(out.len(), p.words);
            Ok(out)
        });
    packed.map_err(|e| {
        if let Some(g) = p.globals.take() {
            g.undo.undo(g.ctx, g.shared);
        }
        (e, p.failure)
    })
}

/// Reads a packet from PE `sender`, refusing what does not fit.
struct Reader<'w, 'c> {
    words: &'w [u64],
    pos: usize,
    sender: usize,
    /// The receiving PE, for global addresses.
    ctx: Option<&'c PeContext>,
}

impl<'w> Reader<'w, '_> {
    fn refuse(&self, message: String) -> Error {
        ErrorKind::Pe {
            pe: self.sender,
            message: format!("refused packet: {message}"),
        }
        .into()
    }

    fn left(&self) -> usize {
        self.words.len() - self.pos
    }

    /// The next `count` words.
    fn take(&mut self, count: usize, what: &dyn std::fmt::Display) -> Result<&'w [u64]> {
        if count > self.left() {
            return Err(self.refuse(format!(
                "truncated: {what} needs {count} words at word {}, past the end of a packet of {} \
                 words",
                self.pos,
                self.words.len()
            )));
        }
        let taken = &self.words[self.pos..self.pos + count];
        self.pos += count;
        Ok(taken)
    }

    fn next(&mut self, what: &dyn std::fmt::Display) -> Result<u64> {
        Ok(self.take(1, what)?[0])
    }

    /// The handle a value word of object `at` (of the values: `None`)
    /// stands for; `objs` holds the objects before it.
    fn value<'i>(&self, w: u64, at: Option<usize>, objs: &[Handle<'i>]) -> Result<Handle<'i>> {
        if w & 1 == 1 {
            return Ok(Handle::int(value_int(w)));
        }
        let k = w >> 1;
        match usize::try_from(k).ok().and_then(|k| objs.get(k)) {
            Some(&h) => Ok(h),
            None => Err(self.refuse(match at {
                Some(at) => format!(
                    "object {at} references object {k}: only objects 0..{at} come before it"
                ),
                None => format!(
                    "a value references object {k}, but the packet has {} objects",
                    objs.len()
                ),
            })),
        }
    }

    /// The descriptor table: packet id → the receiver's descriptor.
    fn descriptors<'d>(&mut self, d: usize, descs: &'d DescriptorTable) -> Result<DescMap<'d>> {
        let mut table = DescMap::with_capacity_and_hasher(d, Default::default());
        for j in 0..d {
            let entry = self.take(2, &format_args!("descriptor entry {j}"))?;
            let (id, fp) = (entry[0], entry[1]);
            let id = match u16::try_from(id) {
                Ok(id) if id >= FIRST_MIXED_ID && u32::from(id) < ID_LIMIT => id,
                _ => {
                    return Err(self.refuse(format!(
                        "descriptor entry {j}: {id} is not a mixed-object descriptor id"
                    )))
                }
            };
            if id == ID_EPHEMERON || id == ID_FETCHME {
                return Err(self.refuse(format!(
                    "descriptor entry {j}: id {id} is a built-in descriptor that does not travel \
                     as an object (ephemerons do not travel, FetchMes travel as global addresses)"
                )));
            }
            let Some(desc) = descs.get(id) else {
                return Err(self.refuse(format!(
                    "descriptor entry {j}: unknown descriptor id {id} (not registered here)"
                )));
            };
            if desc.is_mutable() {
                return Err(self.refuse(format!(
                    "descriptor entry {j}: descriptor `{}` (id {id}) is mutable",
                    desc.name()
                )));
            }
            if fp != fingerprint(desc) {
                return Err(self.refuse(format!(
                    "descriptor entry {j}: fingerprint mismatch for id {id} (`{}`): the packet \
                     has {fp:#x}, this PE {:#x} — another layout",
                    desc.name(),
                    fingerprint(desc)
                )));
            }
            if table.insert(id, desc).is_some() {
                return Err(self.refuse(format!("descriptor entry {j}: id {id} is listed twice")));
            }
        }
        Ok(table)
    }

    /// Reads object `k` and allocates it; `objs` holds objects `0..k`.
    fn object<'i>(
        &mut self,
        s: &mut Scope<'i>,
        k: usize,
        objs: &[Handle<'i>],
        table: &DescMap<'_>,
        scratch: &mut (Vec<Handle<'i>>, Vec<u64>),
    ) -> Result<Handle<'i>> {
        let t = self.next(&format_args!("the tag of object {k}"))?;
        let (kind, id) = (t & KIND_BITS, ((t >> ID_SHIFT) & 0xffff) as u16);
        let count = t >> COUNT_SHIFT;
        if kind > KIND_GLOBAL || (kind != KIND_MIXED && id != 0) {
            return Err(self.refuse(format!("object {k}: unknown tag {t:#x}")));
        }
        // Checked before anything is sized by it.
        let count = match usize::try_from(count) {
            Ok(c) if c <= self.left() => c,
            _ => {
                return Err(self.refuse(format!(
                    "object {k}: {count} fields, but only {} words are left in the packet",
                    self.left()
                )))
            }
        };
        let what = format_args!("the fields of object {k}");
        if kind == KIND_GLOBAL {
            return self.global(s, k, count);
        }
        match kind {
            KIND_RAW => {
                let fields = self.take(count, &what)?;
                s.alloc_raw(fields)
            }
            KIND_VECTOR => {
                let fields = self.take(count, &what)?;
                let values = &mut scratch.0;
                values.clear();
                for &w in fields {
                    values.push(self.value(w, Some(k), objs)?);
                }
                s.alloc_vector(values)
            }
            _ => {
                let Some(&d) = table.get(&id) else {
                    return Err(self.refuse(format!(
                        "object {k}: descriptor id {id} is not listed in the packet's descriptor \
                         table"
                    )));
                };
                if count != d.size() {
                    return Err(self.refuse(format!(
                        "object {k}: {count} fields, but descriptor `{}` (id {id}) has {}",
                        d.name(),
                        d.size()
                    )));
                }
                let fields = self.take(count, &what)?;
                let (values, raw) = (&mut scratch.0, &mut scratch.1);
                values.clear();
                raw.clear();
                for (i, &w) in fields.iter().enumerate() {
                    if d.is_pointer_field(i) {
                        values.push(self.value(w, Some(k), objs)?);
                    } else {
                        raw.push(w);
                    }
                }
                s.alloc_mixed(DescId(id), values, raw)
            }
        }
    }
}

impl Reader<'_, '_> {
    /// Reads global address `k` of `count` fields and makes it this PE's
    /// object or FetchMe.
    fn global<'i>(&mut self, s: &mut Scope<'i>, k: usize, count: usize) -> Result<Handle<'i>> {
        if count != GLOBAL_FIELDS {
            return Err(self.refuse(format!(
                "object {k}: a global address of {count} fields, not {GLOBAL_FIELDS}"
            )));
        }
        let f = self.take(GLOBAL_FIELDS, &format_args!("the fields of object {k}"))?;
        let (pe, id, weight, header) = (f[0], f[1], f[2], f[3]);
        let Some(ctx) = self.ctx else {
            return Err(self.refuse(format!(
                "object {k}: a global address, but this runtime is not a PE of a group"
            )));
        };
        let pe = match u32::try_from(pe) {
            Ok(p) if (p as usize) < ctx.pes => p,
            _ => {
                return Err(self.refuse(format!(
                    "object {k}: a global address of PE {pe}, outside the group of {} PEs",
                    ctx.pes
                )))
            }
        };
        let weight = match u32::try_from(weight) {
            Ok(w) if w > 0 => w,
            _ => {
                return Err(self.refuse(format!(
                    "object {k}: a global address of weight {weight} (1 ..= 2^32 - 1)"
                )))
            }
        };
        if valid_header(header).is_none() {
            return Err(self.refuse(format!("object {k}: {header:#x} is not an object header")));
        }
        let ga = GlobalAddress {
            gid: GlobalId { pe, id },
            weight,
        };
        ctx.import_global(s, ga, header, self.sender)
    }
}

/// Unpacks a packet from PE `sender` into `s`'s heap: one handle per packed
/// value, in order.
///
/// Errors: [`ErrorKind::Pe`] naming `sender` for a packet that breaks the
/// format or does not fit this runtime's descriptors (nothing is returned
/// then; what was built is garbage); the allocation errors (the heap limit)
/// as they are.
pub fn unpack<'s>(s: &mut Scope<'s>, words: &[u64], sender: usize) -> Result<Vec<Handle<'s>>> {
    unpack_in(s, words, sender, None)
}

/// [`unpack`] on a PE of a group (`ctx`): global addresses become this
/// PE's objects or FetchMes. A packet refused halfway leaves the weight
/// of the GAs read so far in FetchMes that are garbage: the next import
/// scan returns it.
pub(crate) fn unpack_in<'s>(
    s: &mut Scope<'s>,
    words: &[u64],
    sender: usize,
    ctx: Option<&PeContext>,
) -> Result<Vec<Handle<'s>>> {
    let mut r = Reader {
        words,
        pos: 0,
        sender,
        ctx,
    };
    let header = r.take(HEADER_WORDS, &"the header")?;
    let (v, n, d) = (header[0], header[1], header[2]);
    // Each object takes at least its tag word: the counts must fit in the
    // packet before anything is sized by them.
    let least = u128::from(v) + u128::from(n) + 2 * u128::from(d) + HEADER_WORDS as u128;
    if least > words.len() as u128 {
        return Err(r.refuse(format!(
            "{v} values, {n} objects and {d} descriptor entries do not fit in a packet of {} \
             words",
            words.len()
        )));
    }
    // All three are below the packet's length now.
    let (v, n, d) = (v as usize, n as usize, d as usize);
    let free = ROOT_STACK_SLOTS.saturating_sub(s.roots_in_use());
    if n + v > free {
        return Err(r.refuse(format!(
            "{n} objects and {v} values need more root slots than the {free} left on this vproc"
        )));
    }
    let shared = s.shared();
    let table = r.descriptors(d, &shared.descs)?;
    // The objects are held by handles of an inner scope, so collections
    // move them safely; only the values' words leave it, and they are
    // rooted again below before anything can collect.
    let values: Vec<u64> = s.scope(|s| -> Result<Vec<u64>> {
        let mut objs = Vec::with_capacity(n);
        let mut scratch = (Vec::new(), Vec::new());
        for k in 0..n {
            let h = r.object(s, k, &objs, &table, &mut scratch)?;
            objs.push(h);
        }
        let encoded = r.take(v, &"the values")?;
        let values = encoded
            .iter()
            .map(|&w| r.value(w, None, &objs).map(|h| s.word(h)))
            .collect::<Result<Vec<u64>>>()?;
        if r.left() != 0 {
            return Err(r.refuse(format!("{} trailing words after the values", r.left())));
        }
        Ok(values)
    })?;
    Ok(values.into_iter().map(|w| s.push_root(w)).collect())
}

#[cfg(all(test, not(loom)))]
#[path = "pack_tests.rs"]
mod tests;
