/*
 * numagc_inline.h: the compiled-code interface of numagc in C — the fast
 * paths a compiler emits inline (allocation, safepoint poll, frames of
 * root slots, the store barrier, reads of known layouts), over the
 * per-vproc mutator record `numagc_mutator` of numagc.h. The slow paths
 * are the library's `numagc_*_slow` functions. docs/c-api.md, "Compiled
 * code", shows how to emit code against it; the Rust side is the module
 * `numagc::compiled`, whose doc is the contract:
 *
 *  1. A value word (uint64_t: an immediate with bit 0 set, or an object's
 *     address) held in a C local is valid only until the next call that
 *     may collect: numagc_inline_alloc, numagc_inline_alloc_block,
 *     numagc_alloc_shared, numagc_inline_poll, numagc_inline_store, the
 *     register forms numagc_alloc_at, numagc_alloc_block_at and
 *     numagc_poll_at, numagc_store_at, and every numagc.h function taking
 *     a scope. Values
 *     live across such a call are kept in frame slots and reloaded.
 *  2. Every value field of an object from numagc_inline_alloc (and every
 *     header and field of a block from numagc_inline_alloc_block) is
 *     written with numagc_inline_init before the next such call.
 *  3. Reads name live objects and fields within their length.
 *  4. Frames are popped in reverse order of their pushes. Handles
 *     (numagc_value) made while a compiled frame is pushed must not be
 *     popped under: make them before pushing or after popping (a slow path
 *     that finds the frames popped below live handles refuses with
 *     NUMAGC_ERR_MISUSE).
 *
 * The record's layout is checked against the library's (the C ABI test
 * compiles a program that prints offsetof of every field).
 */
#ifndef NUMAGC_INLINE_H
#define NUMAGC_INLINE_H

#include "numagc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Header word of an object of descriptor `desc` (a numagc_desc id, or
 * NUMAGC_VECTOR_ID / NUMAGC_RAW_ID / NUMAGC_ARRAY_ID) with `fields` fields. */
#define NUMAGC_VECTOR_ID 1u
#define NUMAGC_RAW_ID 0u
#define NUMAGC_ARRAY_ID 2u
static inline uint64_t numagc_inline_header(uint32_t desc, uint64_t fields) {
    return (fields << 16) | ((uint64_t)(desc & 0x7fffu) << 1) | 1u;
}

/* Immediates: a 63-bit integer shifted left by one, bit 0 set. */
static inline uint64_t numagc_inline_word_int(int64_t i) { return ((uint64_t)i << 1) | 1u; }
static inline int64_t numagc_inline_word_to_int(uint64_t w) { return (int64_t)w >> 1; }
static inline bool numagc_inline_word_is_ptr(uint64_t w) { return (w & 1u) == 0; }

/* The allocation limit: written by other threads (zeroed to call this
 * vproc to a collection), so it is read atomically (a plain load). */
static inline size_t numagc_inline_limit(const numagc_mutator *m) {
    return __atomic_load_n(&m->alloc_limit, __ATOMIC_RELAXED);
}

/* Allocates an object of `fields` fields (at most NUMAGC_MAX_SMALL_FIELDS)
 * with header word `header` in the nursery: a bump and one compare; the
 * slow path collects. Returns NUMAGC_OK and the object in *out, or the
 * slow path's status (NUMAGC_ERR_HEAP_LIMIT, ...). Its fields are written
 * with numagc_init before the next call that may collect. */
static inline int numagc_inline_alloc(numagc_mutator *m, uint64_t header, size_t fields,
                               uint64_t *out) {
    size_t p = m->alloc_ptr;
    size_t next = p + (fields + 1) * 8;
    if (__builtin_expect(next > numagc_inline_limit(m), 0)) {
        /* Through a local of its own: the address that escapes into the
         * slow path is not the caller's, which can stay in a register. */
        uint64_t o = 0;
        int rc = numagc_alloc_slow(m, header, fields, &o);
        *out = o;
        return rc;
    }
    m->alloc_ptr = next;
    /* allocation prefetch: the line a few objects ahead, for writing */
    __builtin_prefetch((const void *)(next + NUMAGC_ALLOC_PREFETCH_DISTANCE), 1, 3);
    *(uint64_t *)p = header;
    *out = (uint64_t)p;
    return NUMAGC_OK;
}

/* Allocates several objects at once, with one bump and one compare (a
 * compiler's combined allocation: all the objects of a basic block): a
 * block of `words` words (each object's fields plus its header word; 2 to
 * NUMAGC_MAX_BLOCK_WORDS in all). *out is the first object, its header
 * `first_header` written; the others lie after it, placed with
 * numagc_inline_place. Every object's header and fields are written before
 * the next call that may collect, and the objects cover the block. */
static inline int numagc_inline_alloc_block(numagc_mutator *m, uint64_t first_header,
                                            size_t words, uint64_t *out) {
    size_t p = m->alloc_ptr;
    size_t next = p + words * 8;
    if (__builtin_expect(next > numagc_inline_limit(m), 0)) {
        uint64_t o = 0; /* as in numagc_inline_alloc */
        int rc = numagc_alloc_block_slow(m, first_header, words, &o);
        *out = o;
        return rc;
    }
    m->alloc_ptr = next;
    /* allocation prefetch: the line a few objects ahead, for writing */
    __builtin_prefetch((const void *)(next + NUMAGC_ALLOC_PREFETCH_DISTANCE), 1, 3);
    *(uint64_t *)p = first_header;
    *out = (uint64_t)p;
    return NUMAGC_OK;
}

/* The object `offset` words into a block from numagc_inline_alloc_block,
 * its header word written. */
static inline uint64_t numagc_inline_place(uint64_t block, size_t offset, uint64_t header) {
    uint64_t *o = (uint64_t *)block + offset;
    *o = header;
    return (uint64_t)o;
}

/* Writes field i of an object just returned by numagc_inline_alloc (no barrier:
 * the object is in the nursery). */
static inline void numagc_inline_init(uint64_t obj, size_t i, uint64_t w) {
    ((uint64_t *)obj)[1 + i] = w;
}

/* A safepoint: one load and one compare. */
static inline int numagc_inline_poll(numagc_mutator *m) {
    if (__builtin_expect(numagc_inline_limit(m) == 0, 0))
        return numagc_poll_slow(m);
    return NUMAGC_OK;
}

/* Pushes a frame of n root slots, each NUMAGC_NIL; the collectors scan and
 * update them. NULL (with numagc_last_error set) when the root stack is
 * full. */
static inline uint64_t *numagc_inline_frame_push(numagc_mutator *m, size_t n) {
    uint64_t *base = m->roots_top;
    if (__builtin_expect((size_t)(m->roots_limit - base) < n, 0)) {
        numagc_frame_overflow(m, n);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        base[i] = NUMAGC_NIL;
    m->roots_top = base + n;
    return base;
}

/* Pops the frame at `frame` and every frame pushed after it. */
static inline void numagc_inline_frame_pop(numagc_mutator *m, uint64_t *frame) {
    m->roots_top = frame;
}

/* Field i of obj: one load. */
static inline uint64_t numagc_inline_field(uint64_t obj, size_t i) {
    return ((const uint64_t *)obj)[1 + i];
}

/* Field i of a mutable object, which other vprocs may write. */
static inline uint64_t numagc_inline_field_shared(uint64_t obj, size_t i) {
    return __atomic_load_n(&((uint64_t *)obj)[1 + i], __ATOMIC_ACQUIRE);
}

/* The header word of obj, through the forwarding address of a promoted
 * object (a header has bit 0 set; a forwarding address does not). */
static inline uint64_t numagc_inline_header_of(uint64_t obj) {
    uint64_t h = __atomic_load_n((uint64_t *)obj, __ATOMIC_ACQUIRE);
    if ((h & 1u) == 0)
        h = __atomic_load_n((uint64_t *)h, __ATOMIC_ACQUIRE);
    return h;
}
static inline uint32_t numagc_inline_header_desc(uint64_t h) { return (uint32_t)((h >> 1) & 0x7fffu); }
static inline uint64_t numagc_inline_header_fields(uint64_t h) { return h >> 16; }

/* Stores value w into value field i of the mutable object obj, through the
 * plan's barrier: inline tests, the slow path out of line.
 *   split (plan 0): a value in this vproc's local heap is promoted first,
 *     and with young global collections every store is remembered;
 *   shared (plan 1): the deletion barrier for an overwritten major-heap
 *     value, the remembered set for a stored minor-heap value. */
static inline bool numagc_inline_store_is_slow(const numagc_mutator *m, const uint64_t *cell,
                                               uint64_t w) {
    uint64_t lo = m->barrier_lo, len = m->barrier_len;
    if (m->plan == 0)
        return (w - lo) < len || m->remember_all;
    uint64_t old = __atomic_load_n(cell, __ATOMIC_RELAXED);
    return ((old & 1u) == 0 && (old - lo) >= len) || (w - lo) < len;
}

static inline int numagc_inline_store(numagc_mutator *m, uint64_t obj, size_t i, uint64_t w) {
    uint64_t *cell = &((uint64_t *)obj)[1 + i];
    if (__builtin_expect(numagc_inline_store_is_slow(m, cell, w), 0))
        return numagc_store_slow(m, obj, i, w);
    __atomic_store_n(cell, w, __ATOMIC_RELEASE);
    return NUMAGC_OK;
}

/* Stores the raw word w into raw field i of obj, an object from
 * numagc_alloc_shared (raw data over NUMAGC_MAX_SMALL_FIELDS words, say)
 * or a mutable one: no barrier, raw words are not values (the Rust
 * module's Mutator::store_raw). A release store, as numagc_inline_store's,
 * for other vprocs that read the object. */
static inline void numagc_inline_store_raw(uint64_t obj, size_t i, uint64_t w) {
    __atomic_store_n(&((uint64_t *)obj)[1 + i], w, __ATOMIC_RELEASE);
}

/* ---- Register code --------------------------------------------------------
 * The allocation pointer and the root stack's top held in C locals (which
 * the C compiler keeps in registers) instead of the record, as GHC keeps
 * Hp and Sp and OCaml its young pointer in r15: each allocation of code on
 * the record loads and stores m->alloc_ptr, so it waits for the store of
 * the one before it (in parfib, the program's critical path; the Rust
 * module numagc::compiled's `registers` has the figures). Register code
 * passes `hp` and `sp` to its functions (and gets `hp` back), and the
 * record is brought up to date only where the collector looks: the slow
 * paths below store both before they may collect and reload `hp` after.
 * Every other call that may collect, or reads the record (numagc_inline_*,
 * numagc_alloc_shared, numagc.h's scope functions, returning from the
 * callback), expects the record current: numagc_regs_store before it and
 * numagc_regs_hp after. Frames are slots at `sp`: numagc_push_at returns
 * the top above them for the calls made while they live; no store pops
 * them (the code goes on with its own `sp`). On an error the record is
 * current, with the top of the frames of the failed call: store the top
 * the code entered with before going on. */

/* The registers, loaded from the record (entering register code). */
static inline size_t numagc_regs_hp(const numagc_mutator *m) { return m->alloc_ptr; }
static inline uint64_t *numagc_regs_sp(const numagc_mutator *m) { return m->roots_top; }

/* Stores the registers into the record (leaving register code). */
static inline void numagc_regs_store(numagc_mutator *m, size_t hp, uint64_t *sp) {
    m->alloc_ptr = hp;
    m->roots_top = sp;
}

/* numagc_inline_alloc at *hp, the frames below `sp` live: a bump of *hp
 * and one compare; past the limit, the registers are stored, the slow path
 * runs (it may collect) and *hp is reloaded. *hp is a local of the caller
 * whose address goes nowhere else, so it stays in a register. */
static inline int numagc_alloc_at(numagc_mutator *m, size_t *hp, uint64_t *sp, uint64_t header,
                                  size_t fields, uint64_t *out) {
    size_t p = *hp;
    size_t next = p + (fields + 1) * 8;
    if (__builtin_expect(next > numagc_inline_limit(m), 0)) {
        numagc_regs_store(m, p, sp);
        uint64_t o = 0; /* as in numagc_inline_alloc */
        int rc = numagc_alloc_slow(m, header, fields, &o);
        *out = o;
        *hp = m->alloc_ptr;
        return rc;
    }
    *hp = next;
    __builtin_prefetch((const void *)(next + NUMAGC_ALLOC_PREFETCH_DISTANCE), 1, 3);
    *(uint64_t *)p = header;
    *out = (uint64_t)p;
    return NUMAGC_OK;
}

/* numagc_alloc_at's fast path alone: the object's address with *hp bumped
 * past it, or 0 (and *hp unchanged) when the nursery cannot hold it; the
 * caller then takes a slow path of its own, out of line (numagc_alloc_at
 * in a cold function), and the function that allocates keeps no stack
 * frame for the slow path's sake (gcc sets up the frame a slow call
 * needs on entry, even where the call is rarely made). */
static inline uint64_t numagc_try_alloc_at(const numagc_mutator *m, size_t *hp, uint64_t header,
                                           size_t fields) {
    size_t p = *hp;
    size_t next = p + (fields + 1) * 8;
    if (__builtin_expect(next > numagc_inline_limit(m), 0)) return 0;
#if defined(__GNUC__)
    /* A nursery is never at address 0: the caller's test of the result
     * then folds into the limit compare. */
    if (p == 0) __builtin_unreachable();
#endif
    *hp = next;
    __builtin_prefetch((const void *)(next + NUMAGC_ALLOC_PREFETCH_DISTANCE), 1, 3);
    *(uint64_t *)p = header;
    return (uint64_t)p;
}

/* numagc_inline_alloc_block at *hp, as numagc_alloc_at. */
static inline int numagc_alloc_block_at(numagc_mutator *m, size_t *hp, uint64_t *sp,
                                        uint64_t first_header, size_t words, uint64_t *out) {
    size_t p = *hp;
    size_t next = p + words * 8;
    if (__builtin_expect(next > numagc_inline_limit(m), 0)) {
        numagc_regs_store(m, p, sp);
        uint64_t o = 0; /* as in numagc_inline_alloc */
        int rc = numagc_alloc_block_slow(m, first_header, words, &o);
        *out = o;
        *hp = m->alloc_ptr;
        return rc;
    }
    *hp = next;
    __builtin_prefetch((const void *)(next + NUMAGC_ALLOC_PREFETCH_DISTANCE), 1, 3);
    *(uint64_t *)p = first_header;
    *out = (uint64_t)p;
    return NUMAGC_OK;
}

/* A safepoint in register code: one load and one compare; when a
 * collection or a request waits, the registers are stored, the safepoint
 * runs and *hp is reloaded. */
static inline int numagc_poll_at(numagc_mutator *m, size_t *hp, uint64_t *sp) {
    if (__builtin_expect(numagc_inline_limit(m) != 0, 1))
        return NUMAGC_OK;
    numagc_regs_store(m, *hp, sp);
    int rc = numagc_poll_slow(m);
    *hp = m->alloc_ptr;
    return rc;
}

/* numagc_inline_store from register code: the same inline test; past
 * it the registers are stored, the slow path runs (it may promote w and
 * collect: values in C locals are then stale, reload them from frames)
 * and *hp is reloaded. */
static inline int numagc_store_at(numagc_mutator *m, size_t *hp, uint64_t *sp, uint64_t obj,
                                  size_t i, uint64_t w) {
    uint64_t *cell = &((uint64_t *)obj)[1 + i];
    if (__builtin_expect(!numagc_inline_store_is_slow(m, cell, w), 1)) {
        __atomic_store_n(cell, w, __ATOMIC_RELEASE);
        return NUMAGC_OK;
    }
    numagc_regs_store(m, *hp, sp);
    int rc = numagc_store_slow(m, obj, i, w);
    *hp = m->alloc_ptr;
    return rc;
}

/* Pushes a frame of n slots at `sp`, each NUMAGC_NIL (the caller writes
 * them: sp[0] .. sp[n-1]), and returns the top above it; NULL (with
 * numagc_last_error set) when the root stack is full. */
static inline uint64_t *numagc_push_at(numagc_mutator *m, uint64_t *sp, size_t n) {
    if (__builtin_expect((size_t)(m->roots_limit - sp) < n, 0)) {
        numagc_frame_overflow(m, n);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        sp[i] = NUMAGC_NIL;
    return sp + n;
}

#ifdef __cplusplus
}
#endif

#endif /* NUMAGC_INLINE_H */
