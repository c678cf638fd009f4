//! The out-of-line halves of the compiled-code interface: what runs when an
//! inline test fails (the nursery is exhausted, a collection or request
//! waits, a store needs the plan's barrier), the allocations that are never
//! inline (shared and large objects), and the debug-build checks.

use crate::error::{Error, Result};
#[cfg(debug_assertions)]
use crate::object::header::ID_LIMIT;
use crate::object::header::{Header, ID_ARRAY, ID_RAW, ID_VECTOR, MAX_LENGTH};
#[cfg(debug_assertions)]
use crate::object::is_pointer;
use crate::object::{Obj, NIL};
use crate::plan;
use crate::vproc::Vproc;

/// The header word a debug build writes over a nursery a collection has
/// emptied: an id no descriptor has and the largest length, so a value
/// held across the collection without a frame slot is caught at its next
/// use (by [`check_field`], and by the verifier if it was stored).
#[cfg(debug_assertions)]
pub(crate) const POISON: u64 = Header::new((ID_LIMIT - 3) as u16, MAX_LENGTH).bits();

/// Fills `[from, to)` with [`POISON`] (debug builds, after a minor
/// collection has evacuated a nursery).
#[cfg(debug_assertions)]
pub(crate) fn poison(from: usize, to: usize) {
    let mut p = from;
    while p < to {
        // SAFETY: the caller passes an emptied nursery range of its own
        // heap: mapped, 8-aligned, and read by no one.
        unsafe { (p as *mut u64).write(POISON) };
        p += 8;
    }
}

/// `alloc`'s slow path: the plan collects and refills the nursery.
pub(super) fn alloc(v: &mut Vproc, header: u64, bytes: usize) -> Result<u64> {
    match plan::alloc_slow(v, bytes)? {
        Some(p) => {
            // SAFETY: `p` is a fresh nursery reservation of `bytes`.
            unsafe { (p as *mut u64).write(header) };
            Ok(p as u64)
        }
        None => Err(Error::misuse(format!(
            "an object of {bytes} bytes does not fit the nursery; allocate it with alloc_shared"
        ))),
    }
}

/// The allocation slow path of an object of `fields` fields (at most
/// `MAX_SMALL_FIELDS`; more is a misuse): `Mutator::alloc_out_of_line`'s
/// and `Ctx::alloc_at_slow`'s.
pub(super) fn alloc_small(v: &mut Vproc, header: u64, fields: usize) -> Result<u64> {
    if fields > super::MAX_SMALL_FIELDS {
        return Err(Error::misuse(format!(
            "alloc of {fields} fields: at most {} (larger objects: alloc_shared)",
            super::MAX_SMALL_FIELDS
        )));
    }
    alloc(v, header, (fields + 1) * 8)
}

/// The slow path of a combined allocation of `words` words in all (2 ..=
/// `MAX_BLOCK_WORDS`; else a misuse), the first header `header`:
/// `Mutator::alloc_block_out_of_line`'s and `Ctx::alloc_many_at_slow`'s.
pub(super) fn alloc_block(v: &mut Vproc, header: u64, words: usize) -> Result<u64> {
    if !(2..=super::MAX_BLOCK_WORDS).contains(&words) {
        return Err(Error::misuse(format!(
            "alloc_block of {words} words: from 2 (one header and one field) to {}",
            super::MAX_BLOCK_WORDS
        )));
    }
    alloc(v, header, words * 8)
}

/// Checks a header word from compiled code and gives its length and
/// whether each field is a value (`None`: all are) and whether the object
/// is mutable.
fn decode(v: &Vproc, header: u64) -> Result<(Header, Option<Vec<bool>>)> {
    let h = Header::decode(header)
        .ok_or_else(|| Error::misuse(format!("{header:#x} is not a header word (bit 0 clear)")))?;
    match h.id() {
        // Raw data has no value fields (the caller tests for it).
        ID_RAW => Ok((h, Some(Vec::new()))),
        ID_VECTOR | ID_ARRAY => Ok((h, None)),
        id => {
            let d = v
                .shared
                .descs
                .get(id)
                .ok_or_else(|| Error::from(crate::error::ErrorKind::UnknownDescriptor(id)))?;
            if d.size() != h.len() {
                return Err(Error::misuse(format!(
                    "descriptor `{}` has {} fields; the header says {}",
                    d.name(),
                    d.size(),
                    h.len()
                )));
            }
            Ok((
                h,
                Some((0..d.size()).map(|i| d.is_pointer_field(i)).collect()),
            ))
        }
    }
}

/// `alloc_shared`: an object in the shared part of the heap, its value
/// fields NIL and raw fields 0.
pub(super) fn alloc_shared(v: &mut Vproc, header: u64) -> Result<u64> {
    let (h, kinds) = decode(v, header)?;
    if h.len() as u64 > MAX_LENGTH || h.len() > (isize::MAX as usize) / 8 - 1 {
        return Err(Error::misuse(format!(
            "object length {} is too large",
            h.len()
        )));
    }
    let raw = h.id() == ID_RAW;
    let addr = plan::alloc_global(v, h.size_bytes())?;
    // SAFETY: `addr` was just reserved for this object.
    let o = unsafe { Obj::at(addr) };
    for i in 0..h.len() {
        let value = !raw && kinds.as_ref().is_none_or(|k| k[i]);
        o.set_field(i, if value { NIL } else { 0 });
    }
    o.init_header(h);
    plan::init_global(v, o);
    Ok(addr as u64)
}

/// A store that the inline barrier sent here: the plan's whole barrier.
pub(super) fn store(v: &mut Vproc, obj: u64, i: usize, w: u64, _mutable: bool) -> Result<()> {
    #[cfg(debug_assertions)]
    check_field(v, obj, i, "store");
    // SAFETY: the caller's contract (a live object, `i` in range).
    let o = unsafe { Obj::at(obj as usize) };
    let mut ws = [w];
    plan::promote_words(v, &mut ws)?;
    plan::pre_store(v, o, i);
    o.field_cell(i)
        .store(ws[0], std::sync::atomic::Ordering::Release);
    plan::remember_store(v, o, i);
    Ok(())
}

/// `poll`'s slow path: join the collection, serve the requests, and put
/// the limit back if nothing else will.
pub(super) fn poll(v: &mut Vproc) {
    plan::poll(v);
    if v.rec().limit() == 0 && v.install_limit() {
        plan::poll(v);
    }
}

#[cold]
#[inline(never)]
pub(super) fn frame_overflow(len: usize) -> ! {
    panic!(
        "root stack overflow: no room for a frame of {len} slots (the limit is {} slots per vproc)",
        super::record::ROOT_STACK_SLOTS
    )
}

#[cold]
#[inline(never)]
pub(super) fn bad_header(obj: u64) -> ! {
    panic!("compiled code: {obj:#x} does not point to an object (its header is not a header)")
}

/// Debug builds: `obj` is an object, not a stale value into an emptied
/// nursery, and `i` is within it.
#[cfg(debug_assertions)]
pub(super) fn check_field(_v: &Vproc, obj: u64, i: usize, what: &str) {
    assert!(
        is_pointer(obj) && obj != 0,
        "compiled {what}: {obj:#x} is not an object pointer"
    );
    let w = crate::mutator::resolve(obj);
    // SAFETY: debug check of a pointer the caller says is live; a stale
    // one still points into the heap's mapped ranges.
    let hw = unsafe { Obj::at(w as usize) }.header_word();
    assert!(
        hw != POISON,
        "compiled {what}: {obj:#x} is a stale value (its object was in a nursery a collection emptied): a value held across a call that may collect must be kept in a frame slot"
    );
    let h = Header::decode(hw)
        .unwrap_or_else(|| panic!("compiled {what}: {obj:#x} has no header ({hw:#x})"));
    assert!(
        i < h.len(),
        "compiled {what}: field {i} of an object of {} fields",
        h.len()
    );
}

/// Debug builds: what `alloc` is given is an immutable object's header of
/// `fields` fields (mutable objects are born shared: `alloc_shared`).
#[cfg(debug_assertions)]
pub(super) fn check_alloc(v: &Vproc, header: u64, fields: usize) {
    let (h, _) = decode(v, header).unwrap_or_else(|e| panic!("compiled alloc: {e}"));
    assert_eq!(
        h.len(),
        fields,
        "compiled alloc: the header says {} fields",
        h.len()
    );
    assert!(
        !crate::object::is_mutable(h, &v.shared.descs),
        "compiled alloc of a mutable object (id {}): use alloc_shared",
        h.id()
    );
}

/// Debug builds: the registers register code stores are inside the
/// vproc's nursery and root stack, 8-aligned
/// (`super::registers`).
#[cfg(debug_assertions)]
pub(super) fn check_regs(v: &Vproc, hp: usize, sp: *mut u64) {
    assert!(
        hp.is_multiple_of(8) && hp >= v.counted_ptr && hp <= v.alloc_end,
        "set_regs: the allocation pointer {hp:#x} is outside the nursery [{:#x}, {:#x}] or unaligned",
        v.counted_ptr,
        v.alloc_end
    );
    let rec = v.rec();
    let (base, limit) = (rec.roots_base() as usize, rec.roots_limit() as usize);
    let sp = sp as usize;
    assert!(
        sp.is_multiple_of(8) && sp >= base && sp <= limit,
        "set_regs: the stack top {sp:#x} is outside the root stack [{base:#x}, {limit:#x}] or unaligned"
    );
}

/// Checks a mutable object's field from code that is not trusted (the C
/// ABI's store slow path): `obj` is 8-aligned and inside a chunk of the
/// heap that is in use, its header decodes, the object is mutable, `i` is
/// within it and of the kind `value` says. Reads nothing outside the heap.
pub(crate) fn check_store(v: &Vproc, obj: u64, i: usize, value: bool) -> Result<()> {
    let h = check_object(v, obj).map_err(|e| Error::misuse(format!("store: {e}")))?;
    let descs = &v.shared.descs;
    if !crate::object::is_mutable(h, descs) {
        return Err(Error::misuse(format!(
            "store into an immutable object (id {})",
            h.id()
        )));
    }
    if i >= h.len() {
        return Err(Error::misuse(format!(
            "field {i} out of range for an object of {} fields",
            h.len()
        )));
    }
    let is_value = h.id() == ID_ARRAY || descs.get(h.id()).is_some_and(|d| d.is_pointer_field(i));
    if is_value != value {
        return Err(Error::misuse(format!(
            "field {i} is a {} field",
            if is_value { "value" } else { "raw" }
        )));
    }
    Ok(())
}

/// Checks that `obj` is an object of this runtime's heap without reading
/// outside it: 8-aligned, inside a chunk in use, with a header (through
/// its forwarding address); returns the header.
pub(crate) fn check_object(v: &Vproc, obj: u64) -> std::result::Result<Header, String> {
    use crate::heap::space::ChunkKind;
    let a = obj as usize;
    let space = &v.shared.heap.space;
    let in_heap = |a: usize| {
        a != 0
            && a.is_multiple_of(8)
            && space
                .chunk_of(a)
                .is_some_and(|c| space.info(c).kind() != ChunkKind::Free)
    };
    if !in_heap(a) {
        return Err(format!("{obj:#x} is not an object of this runtime's heap"));
    }
    let w = crate::mutator::resolve(obj);
    // Not forwarded (nearly always): `w` is `obj`, checked already.
    if w != obj && !in_heap(w as usize) {
        return Err(format!("{obj:#x} forwards to {w:#x}, outside the heap"));
    }
    // SAFETY: `w` is 8-aligned inside a chunk in use (mapped).
    unsafe { Obj::at(w as usize) }
        .header()
        .ok_or_else(|| format!("{obj:#x}: no object header there"))
}
