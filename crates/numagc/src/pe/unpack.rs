//! Unpacking: a packet of another runtime (`super::pack`, whose module
//! doc gives the format) built into this runtime's heap, in packet order.
//!
//! This is the receiving half of GUM's packing
//! (`gumsmp-shared-distributed-heaps.txt`, §2.1). It trusts nothing: every
//! count is checked against the packet's length before anything is
//! allocated, every id against the receiver's table, every reference
//! against the objects built so far; a packet that breaks a rule gives
//! [`ErrorKind::Pe`] naming the sender and the rule ("refused packet:
//! ..."), never a panic. Everything it builds is held by handles (one root
//! slot per object, in a scope of its own that ends with the unpacking: a
//! packet of more objects than the vproc has root slots left is refused),
//! so collections during unpacking move it safely.

use super::address_index::AddressHasher;
use super::global::valid_header;
use super::group::PeContext;
use super::pack::{
    fingerprint, COUNT_SHIFT, GLOBAL_FIELDS, HEADER_WORDS, ID_SHIFT, KIND_BITS, KIND_GLOBAL,
    KIND_MIXED, KIND_RAW, KIND_VECTOR,
};
use super::weight::{GlobalAddress, GlobalId};
use crate::compiled::record::ROOT_STACK_SLOTS;
use crate::error::{Error, ErrorKind, Result};
use crate::object::descriptor::{DescId, Descriptor, DescriptorTable};
use crate::object::header::{FIRST_MIXED_ID, ID_EPHEMERON, ID_FETCHME, ID_LIMIT};
use crate::object::value_int;
use crate::{Handle, Scope};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// A packet's descriptor table: packet id → the receiver's descriptor.
type DescMap<'d> = HashMap<u16, &'d Descriptor, BuildHasherDefault<AddressHasher>>;

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

    /// The next `count` words; `what` names them for the error (a
    /// closure, so that nothing is formatted unless it is needed).
    #[inline]
    fn take<D: std::fmt::Display>(
        &mut self,
        count: usize,
        what: impl FnOnce() -> D,
    ) -> Result<&'w [u64]> {
        if count > self.left() {
            return Err(self.truncated(count, &what()));
        }
        let taken = &self.words[self.pos..self.pos + count];
        self.pos += count;
        Ok(taken)
    }

    #[cold]
    fn truncated(&self, count: usize, what: &dyn std::fmt::Display) -> Error {
        self.refuse(format!(
            "truncated: {what} needs {count} words at word {}, past the end of a packet of {} \
             words",
            self.pos,
            self.words.len()
        ))
    }

    /// The handle a value word of object `at` (of the values: `None`)
    /// stands for; `objs` holds the objects built so far (an immediate
    /// where none is yet).
    #[inline]
    fn value<'i>(&self, w: u64, at: Option<usize>, objs: &[Handle<'i>]) -> Result<Handle<'i>> {
        if w & 1 == 1 {
            return Ok(Handle::int(value_int(w)));
        }
        let k = w >> 1;
        match usize::try_from(k).ok().and_then(|k| objs.get(k)) {
            Some(&h) if !h.is_immediate() => Ok(h),
            _ => Err(self.refuse(match at {
                Some(at) => format!("object {at} references object {k} before it is built"),
                None => format!("a value references object {k}, which is not built"),
            })),
        }
    }

    /// Checks a value word of object `k` of `n`: a reference names another
    /// object of the packet. Notes the reference's direction in `dir`.
    fn check_ref(&self, w: u64, k: usize, n: usize, dir: &mut Directions) -> Result<()> {
        if w & 1 == 1 {
            return Ok(());
        }
        let r = w >> 1;
        if r >= n as u64 {
            return Err(self.refuse(format!(
                "object {k} references object {r}, but the packet has {n} objects"
            )));
        }
        let r = r as usize;
        if r == k {
            return Err(self.refuse(format!(
                "object {k} references itself (immutable objects cannot form a cycle)"
            )));
        }
        if r > k {
            dir.backward = false;
        } else {
            dir.forward = false;
        }
        Ok(())
    }

    /// The descriptor table: packet id → the receiver's descriptor.
    fn descriptors<'d>(&mut self, d: usize, descs: &'d DescriptorTable) -> Result<DescMap<'d>> {
        let mut table = DescMap::with_capacity_and_hasher(d, Default::default());
        for j in 0..d {
            let entry = self.take(2, || format!("descriptor entry {j}"))?;
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

    /// Reads object `k` of `n` and checks it (nothing is kept: see
    /// [`Self::checked`]): its tag, its field count
    /// against its descriptor, its references against the packet, a
    /// global address's fields.
    fn check_object<'d>(
        &mut self,
        k: usize,
        n: usize,
        table: &DescMap<'d>,
        dir: &mut Directions,
    ) -> Result<()> {
        let t = self.take(1, || format!("the tag of object {k}"))?[0];
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
        match kind {
            KIND_GLOBAL if count != GLOBAL_FIELDS => {
                return Err(self.refuse(format!(
                    "object {k}: a global address of {count} fields, not {GLOBAL_FIELDS}"
                )))
            }
            KIND_MIXED => match table.get(&id) {
                None => {
                    return Err(self.refuse(format!(
                        "object {k}: descriptor id {id} is not listed in the packet's descriptor \
                         table"
                    )))
                }
                Some(d) if count != d.size() => {
                    return Err(self.refuse(format!(
                        "object {k}: {count} fields, but descriptor `{}` (id {id}) has {}",
                        d.name(),
                        d.size()
                    )))
                }
                Some(_) => {}
            },
            _ => {}
        }
        // The tag is sound and its fields lie in the packet.
        let c = self.checked(k, self.pos - 1, table);
        self.pos += count;
        if let Layout::Global = c.layout {
            self.global_address(k, c.fields)?;
        }
        let mut i = 0;
        while let Some(w) = c.value_field(i) {
            self.check_ref(w, k, n, dir)?;
            i += 1;
        }
        Ok(())
    }

    /// Object `k`, whose tag is at `start`, with a sound tag, its fields
    /// in the packet and its descriptor listed ([`Self::check_object`]).
    fn checked<'d>(&self, k: usize, start: usize, table: &DescMap<'d>) -> Checked<'w, 'd> {
        let words: &'w [u64] = self.words;
        let t = words[start];
        let (kind, id) = (t & KIND_BITS, ((t >> ID_SHIFT) & 0xffff) as u16);
        let count = (t >> COUNT_SHIFT) as usize;
        let layout = match kind {
            KIND_GLOBAL => Layout::Global,
            KIND_RAW => Layout::Raw,
            KIND_VECTOR => Layout::Vector,
            _ => Layout::Mixed(
                id,
                table
                    .get(&id)
                    .unwrap_or_else(|| panic!("object {k} was checked: its descriptor is listed")),
            ),
        };
        Checked {
            fields: &words[start + 1..start + 1 + count],
            layout,
        }
    }

    /// Allocates checked object `k`; `objs` holds the objects it
    /// references.
    fn build<'i>(
        &self,
        s: &mut Scope<'i>,
        k: usize,
        c: &Checked<'_, '_>,
        objs: &[Handle<'i>],
        scratch: &mut (Vec<Handle<'i>>, Vec<u64>),
    ) -> Result<Handle<'i>> {
        match c.layout {
            Layout::Global => {
                let (ga, header) = self.global_address(k, c.fields)?;
                let ctx = self.ctx.expect("checked: a PE of a group");
                ctx.import_global(s, ga, header, self.sender)
            }
            Layout::Raw => s.alloc_raw(c.fields),
            Layout::Vector => {
                let values = &mut scratch.0;
                values.clear();
                for &w in c.fields {
                    values.push(self.value(w, Some(k), objs)?);
                }
                s.alloc_vector(values)
            }
            Layout::Mixed(id, d) => {
                let (values, raw) = (&mut scratch.0, &mut scratch.1);
                values.clear();
                raw.clear();
                for (i, &w) in c.fields.iter().enumerate() {
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

    /// The global address of object `k`, from its fields, checked.
    fn global_address(&self, k: usize, f: &[u64]) -> Result<(GlobalAddress, u64)> {
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
        Ok((ga, header))
    }

    /// An order to build the objects whose tags are at `starts` in, each
    /// after every object it references, when their references go both
    /// ways (else packet order, or its reverse, is one): a depth-first sort
    /// of the packet's graph, which refuses a cycle.
    fn sort(&self, starts: &[usize], table: &DescMap<'_>) -> Result<Vec<u32>> {
        const NEW: u8 = 0;
        const OPEN: u8 = 1;
        const DONE: u8 = 2;
        let n = starts.len() as u32;
        let mut state = vec![NEW; starts.len()];
        let mut order = Vec::with_capacity(starts.len());
        // (object, its next value field to follow)
        let mut stack: Vec<(u32, usize)> = Vec::new();
        for start in 0..n {
            if state[start as usize] != NEW {
                continue;
            }
            state[start as usize] = OPEN;
            stack.push((start, 0));
            while let Some(top) = stack.last_mut() {
                let (k, i) = *top;
                let object = self.checked(k as usize, starts[k as usize], table);
                let Some(w) = object.value_field(i) else {
                    state[k as usize] = DONE;
                    order.push(k);
                    stack.pop();
                    continue;
                };
                top.1 += 1;
                if w & 1 == 1 {
                    continue;
                }
                // Below `n`: checked with the object.
                let r = (w >> 1) as u32;
                match state[r as usize] {
                    NEW => {
                        state[r as usize] = OPEN;
                        stack.push((r, 0));
                    }
                    OPEN => {
                        return Err(self.refuse(format!(
                            "a cycle through objects {r} and {k} (immutable objects cannot \
                             form one)"
                        )))
                    }
                    _ => {}
                }
            }
        }
        Ok(order)
    }

    /// The global address checked object `k` (its tag at `start`) is,
    /// if it is one: what a packet that is not unpacked, or not wholly,
    /// gives back.
    fn global_at(&self, k: usize, start: usize, table: &DescMap<'_>) -> Option<GlobalAddress> {
        let c = self.checked(k, start, table);
        match c.layout {
            Layout::Global => self.global_address(k, c.fields).ok().map(|(ga, _)| ga),
            _ => None,
        }
    }

    /// Builds the objects whose tags are at `starts`, in `order`, into
    /// `objs`. On an error, the object it stopped at comes with it; that
    /// one and those after it in `order` are left `Handle::NIL`.
    fn build_all<'i>(
        &self,
        s: &mut Scope<'i>,
        starts: &[usize],
        table: &DescMap<'_>,
        order: impl Iterator<Item = usize>,
        objs: &mut [Handle<'i>],
    ) -> std::result::Result<(), (usize, Error)> {
        let mut scratch = (Vec::new(), Vec::new());
        for k in order {
            let c = self.checked(k, starts[k], table);
            objs[k] = self
                .build(s, k, &c, objs, &mut scratch)
                .map_err(|e| (k, e))?;
        }
        Ok(())
    }
}

/// Which way the references of a packet go: every one to a later object
/// (`forward`), every one to an earlier one (`backward`); both when there
/// are none.
#[derive(Clone, Copy)]
struct Directions {
    forward: bool,
    backward: bool,
}

/// How the fields of a checked object are read.
#[derive(Clone, Copy)]
enum Layout<'d> {
    Raw,
    Global,
    Vector,
    Mixed(u16, &'d Descriptor),
}

/// An object of the packet, checked: its layout and fields.
struct Checked<'w, 'd> {
    fields: &'w [u64],
    layout: Layout<'d>,
}

impl Checked<'_, '_> {
    /// Value field `i`, counting value fields only, if it has one.
    #[inline]
    fn value_field(&self, i: usize) -> Option<u64> {
        match self.layout {
            Layout::Raw | Layout::Global => None,
            Layout::Vector => self.fields.get(i).copied(),
            Layout::Mixed(_, d) => d.pointer_offsets().get(i).map(|&o| self.fields[o as usize]),
        }
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
/// PE's objects or FetchMes. An unpacking that stops halfway (the heap
/// limit, a GA refused) leaves the weight of the GAs imported so far in
/// FetchMes that are garbage, which the next import scan returns; the GAs
/// it did not reach, and the one whose FetchMe could not be allocated,
/// give their weight back at once (`PeContext::give_back_addresses`).
pub(crate) fn unpack_in<'s>(
    s: &mut Scope<'s>,
    words: &[u64],
    sender: usize,
    ctx: Option<&PeContext>,
) -> Result<Vec<Handle<'s>>> {
    let shared = s.shared();
    let free = ROOT_STACK_SLOTS.saturating_sub(s.roots_in_use());
    let Parsed {
        r,
        table,
        starts,
        encoded,
        dir,
    } = parse(words, sender, ctx, &shared.descs, free)?;
    let n = starts.len();
    let sorted = if dir.backward || dir.forward {
        None
    } else {
        Some(r.sort(&starts, &table)?)
    };
    // The objects are held by handles of an inner scope, so collections
    // move them safely; only the values' words leave it, and they are
    // rooted again below before anything can collect.
    let values: Vec<u64> = s.scope(|s| -> Result<Vec<u64>> {
        let mut objs = vec![Handle::NIL; n];
        let built = match sorted {
            Some(order) => {
                let order = order.into_iter().map(|k| k as usize);
                r.build_all(s, &starts, &table, order, &mut objs)
            }
            None if dir.backward => r.build_all(s, &starts, &table, 0..n, &mut objs),
            None => r.build_all(s, &starts, &table, (0..n).rev(), &mut objs),
        };
        if let (Err((failed, e)), Some(ctx)) = (&built, ctx) {
            // The object it stopped at gives its GA's weight back only when
            // its allocation failed: `import_global` allocates the FetchMe
            // before it records the weight. A GA refused (`ErrorKind::Pe`)
            // carries no weight this PE can vouch for.
            let unrecorded = matches!(
                e.kind(),
                ErrorKind::HeapLimit { .. } | ErrorKind::MapFailed { .. }
            );
            let unreached: Vec<GlobalAddress> = (0..n)
                .filter(|&k| objs[k] == Handle::NIL && (unrecorded || k != *failed))
                .filter_map(|k| r.global_at(k, starts[k], &table))
                .collect();
            ctx.give_back_addresses(&shared, &unreached, sender);
        }
        built.map_err(|(_, e)| e)?;
        encoded
            .iter()
            .map(|&w| r.value(w, None, &objs).map(|h| s.word(h)))
            .collect::<Result<Vec<u64>>>()
    })?;
    Ok(values.into_iter().map(|w| s.push_root(w)).collect())
}

/// A packet read and checked, nothing built yet.
struct Parsed<'w, 'c, 'd> {
    /// At the values' end, reading the words before the descriptor table.
    r: Reader<'w, 'c>,
    table: DescMap<'d>,
    /// Where each object's tag is.
    starts: Vec<usize>,
    /// The values, encoded.
    encoded: &'w [u64],
    dir: Directions,
}

/// Reads and checks the whole of a packet from PE `sender` against
/// `descs`, refusing it ([`ErrorKind::Pe`]) when it breaks the format, or
/// when its objects and values need more than `free` root slots.
fn parse<'w, 'c, 'd>(
    words: &'w [u64],
    sender: usize,
    ctx: Option<&'c PeContext>,
    descs: &'d DescriptorTable,
    free: usize,
) -> Result<Parsed<'w, 'c, 'd>> {
    let mut r = Reader {
        words,
        pos: 0,
        sender,
        ctx,
    };
    let header = r.take(HEADER_WORDS, || "the header")?;
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
    if n + v > free {
        return Err(r.refuse(format!(
            "{n} objects and {v} values need more root slots than the {free} left on this vproc"
        )));
    }
    // The descriptor table is the packet's last `2 d` words: read it
    // first, and the objects and values from the words before it.
    let table_at = words.len() - 2 * d;
    let table = Reader {
        words,
        pos: table_at,
        sender,
        ctx,
    }
    .descriptors(d, descs)?;
    r.words = &words[..table_at];
    // Everything is read and checked before anything is built.
    let mut dir = Directions {
        forward: true,
        backward: true,
    };
    let mut starts = Vec::with_capacity(n);
    for k in 0..n {
        starts.push(r.pos);
        r.check_object(k, n, &table, &mut dir)?;
    }
    let encoded = r.take(v, || "the values")?;
    if let Some(&w) = encoded.iter().find(|&&w| w & 1 == 0 && w >> 1 >= n as u64) {
        return Err(r.refuse(format!(
            "a value references object {}, but the packet has {n} objects",
            w >> 1
        )));
    }
    if r.left() != 0 {
        return Err(r.refuse(format!(
            "{} trailing words after the values, before the descriptor table",
            r.left()
        )));
    }
    Ok(Parsed {
        r,
        table,
        starts,
        encoded,
        dir,
    })
}

/// The global addresses a packet from PE `sender` carries, for a packet
/// that will not be unpacked (its message was refused): their weight is
/// to go back to their owners (`PeContext::give_back`). None for a packet
/// that breaks the format: nothing in it can be trusted.
pub(crate) fn globals_of(
    words: &[u64],
    sender: usize,
    ctx: &PeContext,
    descs: &DescriptorTable,
) -> Vec<GlobalAddress> {
    let Ok(p) = parse(words, sender, Some(ctx), descs, usize::MAX) else {
        return Vec::new();
    };
    (0..p.starts.len())
        .filter_map(|k| p.r.global_at(k, p.starts[k], &p.table))
        .collect()
}
