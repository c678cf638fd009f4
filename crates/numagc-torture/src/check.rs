//! The content checker: digests of everything reachable, on the heap and
//! on the shadow, and a precise account of where they differ.
//!
//! A [`Digest`] is a checksum of the graph reachable from a list of roots,
//! walked depth first in field order, with the number of objects and bytes
//! it covered. Both sides are walked by the same code ([`digest`] over a
//! [`Graph`]): the heap through [`View`]s ([`HeapGraph`]), the shadow
//! through its tables ([`ShadowGraph`]). Each object contributes its kind,
//! id, length and every field (integers, raw words, and for pointers the
//! visit of the target), so the checksums agree exactly when the two graphs
//! agree. An object reached again contributes only its id, after the check
//! that it is *the same object* ([`View::same`]): a collection that copied a
//! shared object twice, or lost an update to one copy, changes the digest or
//! is reported at once. A sequence has no id: one reached again (known by
//! its identity, [`View::identity`]) contributes its ordinal among the
//! sequences walked, so its sharing is checked too and its elements are
//! walked once.
//!
//! Issue 5 asks for two comparisons, and the interpreter makes both around
//! every collection it forces: the heap's digest before and after must be
//! equal (nothing reachable changed), and the heap's must equal the
//! shadow's (what is reachable is what the program built). When a digest
//! differs, [`explain`] walks the heap and the shadow side by side and names
//! the first difference by its path from a root.
//!
//! Compiled sections (`crate::compiled`) read the heap as compiled code
//! does, through the `Mutator`'s raw reads ([`MutGraph`]); the same
//! digest and the same comparison apply.
//!
//! The heap invariants of manticore-numa-gc.md §2.3 (no pointer from one
//! local heap into another, none from the global heap into a local heap)
//! are checked by the runtime's own verifier (`--verify`), which the torture
//! runtime always turns on; this module checks content and identity.

use crate::layout::{oid_of, wide_is_value, Descs, Kind, CELL_VALUE, REC_VALUES};
use crate::rng::mix;
use crate::shadow::{Field, SVal, Shadow};
use numagc::compiled::Mutator;
use numagc::object::header::{Header, ID_ARRAY, ID_LIMIT, ID_RAW, ID_ROPE, ID_VECTOR, MAX_LENGTH};
use numagc::object::{is_pointer, value_int};
use numagc::{Handle, ObjectKind, Scope, View};
use std::collections::HashMap;

/// A checksum of a reachable graph, and what it covered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Digest {
    pub checksum: u64,
    /// Distinct objects with an id, plus sequence nodes.
    pub objects: u64,
    /// Their bytes, headers included (for a sequence: its elements' words).
    pub bytes: u64,
}

/// A field or root as a walk sees it.
#[derive(Clone, Copy, Debug)]
pub enum Item<N> {
    Int(i64),
    Raw(u64),
    Obj(N),
}

/// What a walk needs to know of an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub kind: Kind,
    /// The id word (`None` for a sequence).
    pub id: Option<u64>,
    /// Number of fields (elements for a sequence).
    pub len: usize,
}

/// A graph to digest: the heap or the shadow.
pub trait Graph {
    type N: Copy;
    /// Describes object `n` and appends its fields, in order, to `fields`.
    fn open(&self, n: Self::N, fields: &mut Vec<Item<Self::N>>) -> Result<Head, String>;
    /// Whether `a` and `b` are one object.
    fn same(&self, a: Self::N, b: Self::N) -> bool;
    /// A key of `n`'s identity, equal for two nodes exactly when they are
    /// [`Graph::same`] (valid for one walk).
    fn identity(&self, n: Self::N) -> u64;
    /// A short description of `n` for reports.
    fn describe(&self, n: Self::N) -> String;
}

struct Hasher(u64);

impl Hasher {
    fn add(&mut self, tag: u64, x: u64) {
        self.0 = mix(self.0 ^ mix(tag.wrapping_mul(0x100_0000_01b3) ^ x));
    }
}

fn kind_code(k: Kind) -> u64 {
    k as u64 + 1
}

/// The objects a walk has seen, by id word: a table indexed by oid (oids
/// are dense), and a map for any id beyond it.
struct Seen<N> {
    table: Vec<Option<N>>,
    rest: HashMap<u64, N>,
}

impl<N> Default for Seen<N> {
    fn default() -> Self {
        Seen {
            table: Vec::new(),
            rest: HashMap::new(),
        }
    }
}

impl<N: Copy> Seen<N> {
    const TABLE_MAX: usize = 1 << 24;

    fn get(&self, id: &u64) -> Option<&N> {
        match oid_of(*id)
            .map(|o| o as usize)
            .filter(|&o| o < Self::TABLE_MAX)
        {
            Some(o) => self.table.get(o).and_then(|x| x.as_ref()),
            None => self.rest.get(id),
        }
    }

    fn insert(&mut self, id: u64, n: N) {
        match oid_of(id)
            .map(|o| o as usize)
            .filter(|&o| o < Self::TABLE_MAX)
        {
            Some(o) => {
                if self.table.len() <= o {
                    self.table.resize(o + 1, None);
                }
                self.table[o] = Some(n);
            }
            None => {
                self.rest.insert(id, n);
            }
        }
    }
}

/// The digest of everything reachable from `roots`; `Err` when an object
/// cannot be read as one of the program's, or a shared object was found at
/// two places.
pub fn digest<G: Graph>(g: &G, roots: &[Item<G::N>]) -> Result<Digest, String> {
    let mut h = Hasher(0x7057_u64);
    let mut d = Digest::default();
    let mut seen: Seen<G::N> = Seen::default();
    // Sequences have no id: a sequence reached again is known by its
    // identity and contributes its ordinal among the sequences, so its
    // elements are walked once (a list of 3,000 nodes sharing one sequence
    // of 6,000 elements is 9,000 visits, not 18 million).
    let mut seqs: HashMap<u64, u64> = HashMap::new();
    let mut stack: Vec<Item<G::N>> = roots.iter().rev().copied().collect();
    let mut fields = Vec::new();
    h.add(9, roots.len() as u64);
    while let Some(it) = stack.pop() {
        match it {
            Item::Int(i) => h.add(1, i as u64),
            Item::Raw(w) => h.add(2, w),
            Item::Obj(n) => {
                // (No lookup while no sequence was walked: most graphs
                // have none, and this runs for every object.)
                if !seqs.is_empty() {
                    if let Some(&ordinal) = seqs.get(&g.identity(n)) {
                        h.add(7, ordinal);
                        continue;
                    }
                }
                fields.clear();
                let head = g.open(n, &mut fields)?;
                if let Some(id) = head.id {
                    if let Some(&first) = seen.get(&id) {
                        if !g.same(first, n) {
                            return Err(format!(
                                "object {id:#x} is reachable as two different objects ({} and {}): a shared object was duplicated",
                                g.describe(first),
                                g.describe(n)
                            ));
                        }
                        h.add(3, id);
                        continue;
                    }
                    seen.insert(id, n);
                } else if head.len > 0 {
                    // Empty sequences are cheap to walk again, and need not
                    // be distinct objects on the heap.
                    let ordinal = seqs.len() as u64;
                    seqs.insert(g.identity(n), ordinal);
                }
                h.add(4, kind_code(head.kind));
                h.add(5, head.id.unwrap_or(0));
                h.add(6, head.len as u64);
                d.objects += 1;
                d.bytes += (head.len as u64 + 1) * 8;
                stack.extend(fields.drain(..).rev());
            }
        }
    }
    d.checksum = h.0;
    Ok(d)
}

/// A named root of `a` and the root of `b` it should equal.
pub type Paired<A, B> = (String, Item<<A as Graph>::N>, Item<<B as Graph>::N>);

/// The first difference between two graphs reached from paired roots, as
/// "path: heap ..., shadow ...", or `None` when they agree. A path is the
/// root's name and the field indices from it.
pub fn explain<A: Graph, B: Graph>(a: &A, b: &B, roots: &[Paired<A, B>]) -> Option<String> {
    let mut seen: HashMap<u64, (A::N, B::N)> = HashMap::new();
    // Non-empty sequences walked, by identity on each side, with their
    // partner on the other: sharing must be the same on both.
    let (mut seqs_a, mut seqs_b) = (HashMap::new(), HashMap::new());
    let mut stack: Vec<Paired<A, B>> = roots.iter().rev().cloned().collect();
    let (mut fa, mut fb) = (Vec::new(), Vec::new());
    while let Some((path, x, y)) = stack.pop() {
        match (x, y) {
            (Item::Int(i), Item::Int(j)) if i == j => {}
            (Item::Raw(i), Item::Raw(j)) if i == j => {}
            (Item::Obj(p), Item::Obj(q)) => {
                let (ka, kb) = (a.identity(p), b.identity(q));
                match (seqs_a.get(&ka), seqs_b.get(&kb)) {
                    (Some(&pb), _) if pb == kb => continue,
                    (None, None) => {}
                    _ => {
                        return Some(format!(
                            "{path}: the sequence {} is shared differently on the heap and on the shadow ({})",
                            a.describe(p),
                            b.describe(q)
                        ))
                    }
                }
                fa.clear();
                fb.clear();
                let ha = match a.open(p, &mut fa) {
                    Ok(h) => h,
                    Err(e) => return Some(format!("{path}: heap object unreadable: {e}")),
                };
                let hb = b.open(q, &mut fb).expect("the shadow is well formed");
                if ha != hb {
                    return Some(format!(
                        "{path}: heap {ha:?} ({}), shadow {hb:?}",
                        a.describe(p)
                    ));
                }
                if let Some(id) = ha.id {
                    if let Some(&(pa, _)) = seen.get(&id) {
                        if !a.same(pa, p) {
                            return Some(format!(
                                "{path}: object {id:#x} duplicated ({} and {})",
                                a.describe(pa),
                                a.describe(p)
                            ));
                        }
                        continue;
                    }
                    seen.insert(id, (p, q));
                } else if ha.len > 0 {
                    seqs_a.insert(ka, kb);
                    seqs_b.insert(kb, ka);
                }
                for (i, (x, y)) in fa
                    .drain(..)
                    .zip(fb.drain(..))
                    .enumerate()
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                {
                    stack.push((format!("{path}.{i}"), x, y));
                }
            }
            (x, y) => {
                let show_a = match x {
                    Item::Obj(p) => format!("object {}", a.describe(p)),
                    Item::Int(i) => format!("Int({i})"),
                    Item::Raw(w) => format!("Raw({w:#x})"),
                };
                let show_b = match y {
                    Item::Obj(q) => format!("object {}", b.describe(q)),
                    Item::Int(i) => format!("Int({i})"),
                    Item::Raw(w) => format!("Raw({w:#x})"),
                };
                return Some(format!("{path}: heap {show_a}, shadow {show_b}"));
            }
        }
    }
    None
}

/// The shadow as a graph.
pub struct ShadowGraph<'a>(pub &'a Shadow);

impl ShadowGraph<'_> {
    pub fn item(v: SVal) -> Item<u32> {
        match v {
            SVal::Int(i) => Item::Int(i),
            SVal::Obj(o) => Item::Obj(o),
        }
    }
}

impl Graph for ShadowGraph<'_> {
    type N = u32;

    fn open(&self, n: u32, fields: &mut Vec<Item<u32>>) -> Result<Head, String> {
        let o = self
            .0
            .objs
            .get(n as usize)
            .ok_or_else(|| format!("no shadow object {n}"))?;
        fields.extend(o.fields.iter().map(|f| match *f {
            Field::Val(v) => ShadowGraph::item(v),
            Field::Raw(w) => Item::Raw(w),
        }));
        let id = (o.kind != Kind::Seq).then(|| crate::layout::id_word(n));
        Ok(Head {
            kind: o.kind,
            id,
            len: o.fields.len(),
        })
    }

    fn same(&self, a: u32, b: u32) -> bool {
        a == b
    }

    fn identity(&self, n: u32) -> u64 {
        n.into()
    }

    fn describe(&self, n: u32) -> String {
        match self.0.objs.get(n as usize) {
            Some(o) => format!("{:?} oid {n} of {} fields", o.kind, o.fields.len()),
            None => format!("missing oid {n}"),
        }
    }
}

/// The heap, read through views of a scope.
pub struct HeapGraph<'a, 's> {
    pub s: &'a Scope<'s>,
    pub descs: Descs,
}

impl<'a, 's> HeapGraph<'a, 's> {
    pub fn item(v: View<'a>) -> Item<View<'a>> {
        match v.as_int() {
            Some(i) => Item::Int(i),
            None => Item::Obj(v),
        }
    }

    fn seq(&self, v: View<'a>, fields: &mut Vec<Item<View<'a>>>) -> Result<Head, String> {
        let h: Handle<'s> = self.s.handle(v);
        self.s
            .seq_for_each(h, |e| fields.push(Self::item(e)))
            .map_err(|e| format!("a sequence that cannot be read: {e}"))?;
        Ok(Head {
            kind: Kind::Seq,
            id: None,
            len: fields.len(),
        })
    }
}

/// Whether field `i` of a mixed object of `kind` holds a value.
fn is_value_field(kind: Kind, i: usize) -> bool {
    match kind {
        Kind::Pair => i > 0,
        Kind::Rec => REC_VALUES.contains(&i),
        Kind::Wide | Kind::Mid => wide_is_value(i),
        Kind::Cell => i == CELL_VALUE,
        Kind::Vector | Kind::Array | Kind::Seq => true,
        Kind::Raw => false,
    }
}

fn id_from_int(v: View<'_>, what: &str) -> Result<u64, String> {
    v.as_int()
        .map(|i| i as u64)
        .filter(|&w| oid_of(w).is_some())
        .ok_or_else(|| format!("{what} without an id in element 0: {v:?}"))
}

impl<'a, 's> Graph for HeapGraph<'a, 's> {
    type N = View<'a>;

    fn open(&self, v: View<'a>, fields: &mut Vec<Item<View<'a>>>) -> Result<Head, String> {
        let err = |e: numagc::Error| format!("{v:?}: {e}");
        let kind = v.kind().ok_or_else(|| format!("{v:?} is not an object"))?;
        let len = v.len();
        match kind {
            ObjectKind::Raw => {
                let words = v.raw_words().ok_or("raw object without words")?;
                let id = words.first().copied().filter(|&w| oid_of(w).is_some());
                let id = id.ok_or_else(|| format!("raw object without an id: {v:?}"))?;
                fields.extend(words.iter().map(|&w| Item::Raw(w)));
                Ok(Head {
                    kind: Kind::Raw,
                    id: Some(id),
                    len,
                })
            }
            ObjectKind::Vector => {
                // A vector whose element 0 is not an id is a sequence leaf
                // (tabulate's elements are objects).
                let first = (len > 0).then(|| v.field(0));
                if first.is_some_and(|f| f.as_int().is_some_and(|i| oid_of(i as u64).is_some())) {
                    let id = id_from_int(v.field(0), "vector")?;
                    for i in 0..len {
                        fields.push(Self::item(v.try_field(i).map_err(err)?));
                    }
                    Ok(Head {
                        kind: Kind::Vector,
                        id: Some(id),
                        len,
                    })
                } else {
                    self.seq(v, fields)
                }
            }
            ObjectKind::Array => {
                let id = id_from_int(v.try_field(0).map_err(err)?, "array")?;
                for i in 0..len {
                    fields.push(Self::item(v.try_field(i).map_err(err)?));
                }
                Ok(Head {
                    kind: Kind::Array,
                    id: Some(id),
                    len,
                })
            }
            ObjectKind::Mixed(d) => {
                let Some(kind) = self.descs.kind_of(d) else {
                    // Not one of the program's descriptors: a rope node.
                    return self.seq(v, fields);
                };
                let id = v.try_raw(0).map_err(err)?;
                if oid_of(id).is_none() {
                    return Err(format!(
                        "{kind:?} object without an id: {v:?} word 0 = {id:#x}"
                    ));
                }
                for i in 0..len {
                    fields.push(if is_value_field(kind, i) {
                        Self::item(v.try_field(i).map_err(err)?)
                    } else {
                        Item::Raw(v.try_raw(i).map_err(err)?)
                    });
                }
                Ok(Head {
                    kind,
                    id: Some(id),
                    len,
                })
            }
        }
    }

    fn same(&self, a: View<'a>, b: View<'a>) -> bool {
        a.same(b)
    }

    fn identity(&self, n: View<'a>) -> u64 {
        n.identity()
    }

    fn describe(&self, n: View<'a>) -> String {
        format!("{n:?}")
    }
}

/// The heap as compiled code reads it: value words through
/// `numagc::compiled::Mutator`'s `header`, `field` and `field_shared` (the
/// latter for mutable objects), a sequence's rope nodes and leaves walked
/// as `Scope::seq_for_each` walks them. A node is a value word; its
/// identity is the word resolved through a forwarding header (a promoted
/// object's local copy and its global copy are one object).
pub struct MutGraph<'a, 'm> {
    pub m: &'a Mutator<'m>,
    pub descs: Descs,
}

impl MutGraph<'_, '_> {
    pub fn item(w: u64) -> Item<u64> {
        if is_pointer(w) {
            Item::Obj(w)
        } else {
            Item::Int(value_int(w))
        }
    }

    /// The object `w` stands for: a promoted object's header word is its
    /// forwarding address (what `Mutator::header` follows too).
    pub fn resolve(w: u64) -> u64 {
        if !is_pointer(w) {
            return w;
        }
        // SAFETY: `w` is a live value of a frame slot or read from one
        // since the last call that may collect (the walk runs between
        // such calls), so its header word is readable.
        let hw = unsafe { (w as *const u64).read() };
        if hw & 1 == 0 {
            hw
        } else {
            w
        }
    }

    /// The header of the object `w` (through a forwarding address), or
    /// what is wrong with `w`.
    pub fn header(&self, w: u64) -> Result<Header, String> {
        if !is_pointer(w) || w == 0 || !w.is_multiple_of(8) {
            return Err(format!("{w:#x} is not an object pointer"));
        }
        // SAFETY: as in `resolve`.
        let h = unsafe { self.m.header(w) };
        // What debug builds write over a nursery a minor collection
        // emptied: an id no descriptor has, the largest length.
        if u32::from(h.id()) == ID_LIMIT - 3 && h.len() as u64 == MAX_LENGTH {
            return Err(format!(
                "{w:#x} is a stale value: its object was in a nursery a collection emptied (poisoned); a value held across a call that may collect must be in a frame slot"
            ));
        }
        Ok(h)
    }

    fn word(&self, w: u64, i: usize, shared: bool) -> u64 {
        // SAFETY: `w` is live (as in `resolve`) and `i` below its header's
        // length (the callers check).
        unsafe {
            if shared {
                self.m.field_shared(w, i)
            } else {
                self.m.field(w, i)
            }
        }
    }

    fn seq(&self, w: u64, fields: &mut Vec<Item<u64>>) -> Result<Head, String> {
        let mut pending = vec![w];
        while let Some(x) = pending.pop() {
            let h = self.header(x)?;
            match h.id() {
                ID_VECTOR => {
                    fields.extend((0..h.len()).map(|i| Self::item(self.word(x, i, false))))
                }
                ID_ROPE if h.len() == 4 => {
                    pending.push(self.word(x, 3, false));
                    pending.push(self.word(x, 2, false));
                }
                id => {
                    return Err(format!(
                        "{x:#x} (header id {id}, {} fields) is not a sequence node",
                        h.len()
                    ))
                }
            }
        }
        Ok(Head {
            kind: Kind::Seq,
            id: None,
            len: fields.len(),
        })
    }
}

impl Graph for MutGraph<'_, '_> {
    type N = u64;

    fn open(&self, w: u64, fields: &mut Vec<Item<u64>>) -> Result<Head, String> {
        let h = self.header(w)?;
        let len = h.len();
        let id_in = |word: u64, what: &str| {
            oid_of(word)
                .map(|_| word)
                .ok_or_else(|| format!("{what} {w:#x} without an id: word 0 = {word:#x}"))
        };
        let int_id = |word: u64| (!is_pointer(word)).then(|| value_int(word) as u64);
        match h.id() {
            ID_RAW => {
                let words: Vec<u64> = (0..len).map(|i| self.word(w, i, false)).collect();
                let id = id_in(words.first().copied().unwrap_or(0), "raw object")?;
                fields.extend(words.into_iter().map(Item::Raw));
                Ok(Head {
                    kind: Kind::Raw,
                    id: Some(id),
                    len,
                })
            }
            ID_VECTOR => {
                let first = (len > 0).then(|| self.word(w, 0, false)).and_then(int_id);
                match first.filter(|&i| oid_of(i).is_some()) {
                    Some(id) => {
                        fields.extend((0..len).map(|i| Self::item(self.word(w, i, false))));
                        Ok(Head {
                            kind: Kind::Vector,
                            id: Some(id),
                            len,
                        })
                    }
                    None => self.seq(w, fields),
                }
            }
            ID_ARRAY => {
                let first = (len > 0).then(|| self.word(w, 0, true)).and_then(int_id);
                let id = id_in(first.unwrap_or(0), "array")?;
                fields.extend((0..len).map(|i| Self::item(self.word(w, i, true))));
                Ok(Head {
                    kind: Kind::Array,
                    id: Some(id),
                    len,
                })
            }
            ID_ROPE => self.seq(w, fields),
            d => {
                let kind = self.descs.kind_of_id(d).ok_or_else(|| {
                    format!("{w:#x}: header id {d} is no descriptor of the program")
                })?;
                let shared = kind == Kind::Cell;
                if len == 0 {
                    return Err(format!("{kind:?} object {w:#x} of no fields"));
                }
                let id = id_in(self.word(w, 0, shared), &format!("{kind:?} object"))?;
                fields.extend((0..len).map(|i| {
                    let x = self.word(w, i, shared);
                    if is_value_field(kind, i) {
                        Self::item(x)
                    } else {
                        Item::Raw(x)
                    }
                }));
                Ok(Head {
                    kind,
                    id: Some(id),
                    len,
                })
            }
        }
    }

    fn same(&self, a: u64, b: u64) -> bool {
        Self::resolve(a) == Self::resolve(b)
    }

    fn identity(&self, n: u64) -> u64 {
        Self::resolve(n)
    }

    fn describe(&self, n: u64) -> String {
        match self.header(n) {
            Ok(h) => format!(
                "{n:#x} (resolved {:#x}, header id {}, {} fields)",
                Self::resolve(n),
                h.id(),
                h.len()
            ),
            Err(e) => e,
        }
    }
}

/// The heap digest of `roots`, read in a nested scope of `s`.
pub fn heap_digest(
    s: &mut Scope<'_>,
    descs: Descs,
    roots: &[Handle<'_>],
) -> Result<Digest, String> {
    s.scope(|s| {
        let g = HeapGraph { s, descs };
        let items: Vec<_> = roots.iter().map(|&h| HeapGraph::item(s.view(h))).collect();
        digest(&g, &items)
    })
}

/// The shadow digest of `roots`.
pub fn shadow_digest(sh: &Shadow, roots: &[SVal]) -> Digest {
    let items: Vec<_> = roots.iter().map(|&v| ShadowGraph::item(v)).collect();
    digest(&ShadowGraph(sh), &items).expect("the shadow is well formed")
}

/// Compares the heap reachable from `roots` with the shadow's `expected`
/// values (named by `names`): `Ok(digest)` when they agree, else the
/// first difference.
pub fn compare(
    s: &mut Scope<'_>,
    descs: Descs,
    sh: &Shadow,
    names: &[String],
    roots: &[Handle<'_>],
    expected: &[SVal],
) -> Result<Digest, String> {
    s.scope(|s| {
        let g = HeapGraph { s, descs };
        let items: Vec<_> = roots.iter().map(|&h| HeapGraph::item(s.view(h))).collect();
        compare_graph(&g, sh, names, &items, expected)
    })
}

/// [`compare`] for any graph of the heap (the compiled code's,
/// [`MutGraph`]): `Ok(digest)` when the graph reachable from `roots`
/// equals the shadow's `expected` values, else the first difference.
pub fn compare_graph<G: Graph>(
    g: &G,
    sh: &Shadow,
    names: &[String],
    roots: &[Item<G::N>],
    expected: &[SVal],
) -> Result<Digest, String> {
    let want = shadow_digest(sh, expected);
    let got = digest(g, roots);
    if got.as_ref().ok() == Some(&want) {
        return Ok(want);
    }
    let pairs: Vec<Paired<G, ShadowGraph<'_>>> = names
        .iter()
        .zip(roots)
        .zip(expected)
        .map(|((n, &h), &e)| (n.clone(), h, ShadowGraph::item(e)))
        .collect();
    let detail = explain(g, &ShadowGraph(sh), &pairs);
    Err(match (got, detail) {
        (Err(e), _) => format!("the heap cannot be read as the program's: {e}"),
        (Ok(g), Some(d)) => format!("the heap differs from the shadow at {d} (heap digest {:#x}, shadow {:#x})", g.checksum, want.checksum),
        (Ok(g), None) => format!(
            "the heap digest {:#x} ({} objects) differs from the shadow's {:#x} ({} objects), but no field differs",
            g.checksum, g.objects, want.checksum, want.objects
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shadow with one sequence of three pairs (`shared`) and an equal
    /// but distinct second sequence (`twin`).
    fn two_equal_sequences() -> (Shadow, SVal, SVal) {
        let mut sh = Shadow::default();
        let elems: Vec<SVal> = (0..3)
            .map(|i| sh.pair(SVal::Int(i), SVal::Int(7)))
            .collect();
        let shared = sh.seq(elems.clone());
        let twin = sh.seq(elems);
        (sh, shared, twin)
    }

    #[test]
    fn a_sequence_reached_twice_is_walked_once() {
        let (sh, shared, _) = two_equal_sequences();
        let d = shadow_digest(&sh, &[shared, shared]);
        // The sequence and its three pairs, each counted once.
        assert_eq!(d.objects, 4);
    }

    #[test]
    fn sharing_a_sequence_differs_from_two_equal_sequences() {
        let (sh, shared, twin) = two_equal_sequences();
        assert_ne!(
            shadow_digest(&sh, &[shared, shared]),
            shadow_digest(&sh, &[shared, twin])
        );
        let g = ShadowGraph(&sh);
        let pairs = [
            (
                "a".to_string(),
                ShadowGraph::item(shared),
                ShadowGraph::item(shared),
            ),
            (
                "b".to_string(),
                ShadowGraph::item(shared),
                ShadowGraph::item(twin),
            ),
        ];
        let d = explain(&g, &g, &pairs).expect("the sharing differs");
        assert!(d.starts_with("b: the sequence"), "{d}");
        assert!(d.contains("shared differently"), "{d}");
    }
}
