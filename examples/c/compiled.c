/*
 * compiled.c: numagc's compiled-code interface from C (numagc_inline.h):
 * the code a compiler would emit for binary trees, lists whose pairs and
 * cons cells are allocated together (numagc_inline_alloc_block), a
 * mutable array written through the inline store barrier, polls, the
 * same trees built by register code (numagc_alloc_at: the allocation
 * pointer and the root stack's top in C locals), and the misuses the slow
 * paths detect.
 *
 *   cargo build --release -p numagc-capi
 *   cc -std=c11 -O2 -Wall -Wextra -Iinclude examples/c/compiled.c \
 *      -Ltarget/release -l:libnumagc.a -lpthread -ldl -lm -o compiled
 *   ./compiled [depth]      (default 16)
 *   ./compiled --layout     (prints offsetof of every numagc_mutator field)
 *
 * Every vproc builds 2^(20-depth)... trees of `depth` with inline
 * allocation, keeping each subtree in a frame slot while the other is
 * built, and checks every node count against 2^(depth+1) - 1 while
 * collections run; a long tree is kept in a frame slot across all of
 * them. Prints "compiled: all checks passed" and exits 0, or names the
 * first failed check and exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <numagc_inline.h>
#include "check.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
static int DEPTH = 16;
static uint64_t NODE; /* header word of a tree node: two value fields */
static uint64_t PAIR, CONS; /* a pair of immediates, a cons cell */
static numagc_desc CELL_DESC; /* a mutable cell: one value field */

/* make(d): a complete tree, as a compiler emits `Node(make(d-1), make(d-1))`:
 * both subtrees in slots of this call's frame across the calls that may
 * collect. Returns a status; the tree in *out. */
static int make(numagc_mutator *m, int depth, uint64_t *out) {
    uint64_t t;
    if (depth == 0) {
        TRY(numagc_inline_alloc(m, NODE, 2, &t));
        numagc_inline_init(t, 0, NUMAGC_NIL);
        numagc_inline_init(t, 1, NUMAGC_NIL);
        *out = t;
        return NUMAGC_OK;
    }
    uint64_t *f = numagc_inline_frame_push(m, 2);
    if (f == NULL) return NUMAGC_ERR_INVALID_ARGUMENT;
    int rc = make(m, depth - 1, &f[0]);
    if (rc == NUMAGC_OK) rc = make(m, depth - 1, &f[1]);
    if (rc == NUMAGC_OK) rc = numagc_inline_alloc(m, NODE, 2, &t);
    if (rc == NUMAGC_OK) {
        numagc_inline_init(t, 0, f[0]);
        numagc_inline_init(t, 1, f[1]);
        *out = t;
    }
    numagc_inline_frame_pop(m, f);
    return rc;
}

/* make(d) as register code: `hp` (the allocation pointer) and `sp` (the
 * root stack's top) are arguments, and hp comes back with the tree (two
 * words: returned in registers), so neither goes through memory between
 * allocations. The left subtree lies in a slot at sp across the right
 * one's build, and the right one in the slot above across the node's
 * allocation. A failed slow path gives obj 0, its status in at_status (a
 * compiler would raise an exception). */
typedef struct {
    uint64_t obj;
    size_t hp;
} tree_at;
static _Thread_local int at_status;

static tree_at make_at(numagc_mutator *m, size_t hp, uint64_t *sp, int depth) {
    tree_at r = {0, hp};
    uint64_t t;
    if (depth == 0) {
        if ((at_status = numagc_alloc_at(m, &r.hp, sp, NODE, 2, &t)) != NUMAGC_OK) return r;
        numagc_inline_init(t, 0, NUMAGC_NIL);
        numagc_inline_init(t, 1, NUMAGC_NIL);
        r.obj = t;
        return r;
    }
    uint64_t *top = numagc_push_at(m, sp, 2);
    if (top == NULL) {
        at_status = NUMAGC_ERR_INVALID_ARGUMENT;
        return r;
    }
    tree_at a = make_at(m, hp, top, depth - 1);
    if (a.obj == 0) return a;
    sp[0] = a.obj;
    tree_at b = make_at(m, a.hp, top, depth - 1);
    if (b.obj == 0) return b;
    sp[1] = b.obj;
    r.hp = b.hp;
    if ((at_status = numagc_alloc_at(m, &r.hp, top, NODE, 2, &t)) != NUMAGC_OK) return r;
    numagc_inline_init(t, 0, sp[0]);
    numagc_inline_init(t, 1, sp[1]);
    r.obj = t;
    return r;
}

static uint64_t check_tree(uint64_t t) {
    uint64_t l = numagc_inline_field(t, 0);
    if (!numagc_inline_word_is_ptr(l)) return 1;
    return 1 + check_tree(l) + check_tree(numagc_inline_field(t, 1));
}

static uint64_t expected_nodes(int depth) { return (UINT64_C(1) << (depth + 1)) - 1; }

/* Each vproc: a long-lived tree in a frame slot, many short-lived trees,
 * and a mutable array of 64 cells rewritten with young trees through the
 * store barrier. */
static int trees(numagc_scope *s, void *ud) {
    (void)ud;
    numagc_mutator *m;
    TRY(numagc_mutator_get(s, &m));
    uint64_t *f = numagc_inline_frame_push(m, 2);
    if (f == NULL) return NUMAGC_ERR_INVALID_ARGUMENT;
    TRY(make(m, DEPTH, &f[0]));
    uint64_t arr;
    TRY(numagc_alloc_shared(m, numagc_inline_header(NUMAGC_ARRAY_ID, 64), &arr));
    f[1] = arr;
    int iterations = 1 << (20 - DEPTH > 0 ? 20 - DEPTH : 0);
    for (int i = 0; i < iterations; i++) {
        uint64_t t;
        TRY(make(m, DEPTH - 4, &t));
        ASSERT(check_tree(t) == expected_nodes(DEPTH - 4));
        /* Store the young tree into the (shared) array: the barrier. */
        TRY(numagc_inline_store(m, f[1], (size_t)i % 64, t));
        TRY(numagc_inline_poll(m));
    }
    for (size_t i = 0; i < 64 && (int)i < iterations; i++) {
        uint64_t t = numagc_inline_field_shared(f[1], i);
        ASSERT(check_tree(t) == expected_nodes(DEPTH - 4));
    }
    ASSERT(check_tree(f[0]) == expected_nodes(DEPTH));
    uint64_t h = numagc_inline_header_of(f[0]);
    ASSERT(numagc_inline_header_fields(h) == 2);
    numagc_inline_frame_pop(m, f);
    return NUMAGC_OK;
}

/* Each vproc: the trees of `trees` built by register code, a long-lived
 * one and the mutable array in frame slots across the others, each young
 * tree stored into the array through the register form of the barrier
 * (numagc_store_at), a poll after each; the record is brought up to date
 * when the register code is left. */
static int trees_at(numagc_scope *s, void *ud) {
    (void)ud;
    numagc_mutator *m;
    TRY(numagc_mutator_get(s, &m));
    uint64_t *sp0 = numagc_regs_sp(m);
    size_t hp = numagc_regs_hp(m);
    uint64_t *sp = numagc_push_at(m, sp0, 2);
    if (sp == NULL) return NUMAGC_ERR_INVALID_ARGUMENT;
    /* numagc_alloc_shared reads the record: store the registers. */
    numagc_regs_store(m, hp, sp);
    uint64_t arr;
    int rc = numagc_alloc_shared(m, numagc_inline_header(NUMAGC_ARRAY_ID, 64), &arr);
    hp = numagc_regs_hp(m);
    if (rc == NUMAGC_OK) sp0[1] = arr;
    tree_at long_lived = {0, hp};
    if (rc == NUMAGC_OK) {
        long_lived = make_at(m, hp, sp, DEPTH);
        rc = long_lived.obj != 0 ? NUMAGC_OK : at_status;
    }
    if (rc == NUMAGC_OK) {
        sp0[0] = long_lived.obj;
        hp = long_lived.hp;
    }
    int iterations = 1 << (20 - DEPTH > 0 ? 20 - DEPTH : 0);
    for (int i = 0; rc == NUMAGC_OK && i < iterations; i++) {
        tree_at t = make_at(m, hp, sp, DEPTH - 4);
        if (t.obj == 0) {
            rc = at_status;
            break;
        }
        ASSERT(check_tree(t.obj) == expected_nodes(DEPTH - 4));
        hp = t.hp;
        /* The array is reloaded from its slot: make_at may have moved it. */
        rc = numagc_store_at(m, &hp, sp, sp0[1], (size_t)i % 64, t.obj);
        if (rc == NUMAGC_OK) rc = numagc_poll_at(m, &hp, sp);
    }
    if (rc != NUMAGC_OK) {
        /* The record is current; its top is that of the failed call. */
        numagc_regs_store(m, numagc_regs_hp(m), sp0);
        return rc;
    }
    for (size_t i = 0; i < 64 && (int)i < iterations; i++) {
        uint64_t t = numagc_inline_field_shared(sp0[1], i);
        ASSERT(check_tree(t) == expected_nodes(DEPTH - 4));
    }
    ASSERT(check_tree(sp0[0]) == expected_nodes(DEPTH));
    numagc_regs_store(m, hp, sp0);
    ASSERT(numagc_regs_sp(m) == sp0);
    return NUMAGC_OK;
}

/* A list of (i, i*i) pairs built as a compiler emits `(i, i*i) :: rest`:
 * the pair and its cons cell in one block (one bump, one compare), the
 * list in a frame slot across every block; enough of them to collect many
 * times on the way. Then the list is walked and summed. */
static int pair_lists(numagc_scope *s, void *ud) {
    (void)ud;
    numagc_mutator *m;
    TRY(numagc_mutator_get(s, &m));
    uint64_t *f = numagc_inline_frame_push(m, 1);
    if (f == NULL) return NUMAGC_ERR_INVALID_ARGUMENT;
    const int64_t n = 200000;
    for (int64_t i = 0; i < n; i++) {
        uint64_t pair;
        TRY(numagc_inline_alloc_block(m, PAIR, 6, &pair));
        uint64_t cons = numagc_inline_place(pair, 3, CONS);
        numagc_inline_init(pair, 0, numagc_inline_word_int(i));
        numagc_inline_init(pair, 1, numagc_inline_word_int(i * i));
        numagc_inline_init(cons, 0, pair);
        numagc_inline_init(cons, 1, f[0]);
        /* The list is cut at i = 100000, so that blocks die too. */
        f[0] = i == 100000 ? NUMAGC_NIL : cons;
    }
    int64_t count = 0, sum = 0;
    for (uint64_t l = f[0]; numagc_inline_word_is_ptr(l); l = numagc_inline_field(l, 1)) {
        uint64_t p = numagc_inline_field(l, 0);
        ASSERT(numagc_inline_header_fields(numagc_inline_header_of(p)) == 2);
        int64_t a = numagc_inline_word_to_int(numagc_inline_field(p, 0));
        int64_t b = numagc_inline_word_to_int(numagc_inline_field(p, 1));
        ASSERT(b == a * a);
        count++;
        sum += a;
    }
    /* The list holds i = 100001 .. n-1, newest first. */
    int64_t lo = 100001;
    ASSERT(count == n - lo);
    ASSERT(sum == (n - 1) * n / 2 - (lo - 1) * lo / 2);
    numagc_inline_frame_pop(m, f);
    return NUMAGC_OK;
}

/* The slow paths refuse what the inline paths cannot check. */
static int misuse(numagc_scope *s, void *ud) {
    (void)ud;
    numagc_mutator *m;
    TRY(numagc_mutator_get(s, &m));
    numagc_mutator fake;
    memcpy(&fake, m, sizeof fake);
    uint64_t o;
    /* A record that is not this vproc's. */
    EXPECT(numagc_alloc_slow(&fake, NODE, 2, &o), NUMAGC_ERR_MISUSE);
    EXPECT(numagc_alloc_slow(NULL, NODE, 2, &o), NUMAGC_ERR_NULL_ARGUMENT);
    /* Objects too large for the inline path, unknown descriptors, non-headers. */
    EXPECT(numagc_alloc_slow(m, numagc_inline_header(NUMAGC_VECTOR_ID, 31), 31, &o), NUMAGC_ERR_MISUSE);
    EXPECT(numagc_alloc_block_slow(m, NODE, 1, &o), NUMAGC_ERR_MISUSE);
    EXPECT(numagc_alloc_block_slow(m, NODE, NUMAGC_MAX_BLOCK_WORDS + 1, &o), NUMAGC_ERR_MISUSE);
    EXPECT(numagc_alloc_block_slow(&fake, NODE, 6, &o), NUMAGC_ERR_MISUSE);
    EXPECT(numagc_alloc_shared(m, numagc_inline_header(999, 2), &o), NUMAGC_ERR_UNKNOWN_DESCRIPTOR);
    EXPECT(numagc_alloc_shared(m, 42, &o), NUMAGC_ERR_MISUSE);
    /* Stores: into an immutable tree, out of range, into a non-object. */
    uint64_t t;
    TRY(numagc_inline_alloc(m, NODE, 2, &t));
    numagc_inline_init(t, 0, NUMAGC_NIL);
    numagc_inline_init(t, 1, NUMAGC_NIL);
    uint64_t *f = numagc_inline_frame_push(m, 1);
    f[0] = t;
    uint64_t cell;
    TRY(numagc_alloc_shared(m, numagc_inline_header(CELL_DESC, 1), &cell));
    EXPECT(numagc_store_slow(m, f[0], 0, NUMAGC_NIL), NUMAGC_ERR_MISUSE);
    EXPECT(numagc_store_slow(m, cell, 5, NUMAGC_NIL), NUMAGC_ERR_MISUSE);
    EXPECT(numagc_store_slow(m, (uint64_t)(uintptr_t)&fake, 0, NUMAGC_NIL), NUMAGC_ERR_MISUSE);
    TRY(numagc_inline_store(m, cell, 0, numagc_inline_word_int(7)));
    ASSERT(numagc_inline_word_to_int(numagc_inline_field_shared(cell, 0)) == 7);
    numagc_inline_frame_pop(m, f);
    /* A corrupted record: the bump pointer outside the nursery. */
    size_t saved = m->alloc_ptr;
    m->alloc_ptr = 8;
    EXPECT(numagc_poll_slow(m), NUMAGC_ERR_MISUSE);
    m->alloc_ptr = saved;
    /* Words and handles: a word outside the heap is refused. */
    numagc_value v;
    EXPECT(numagc_word_value(s, (uint64_t)(uintptr_t)&fake, &v), NUMAGC_ERR_BAD_VALUE);
    TRY(numagc_word_value(s, numagc_inline_word_int(5), &v));
    ASSERT(numagc_is_int(v));
    return NUMAGC_OK;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--layout") == 0) {
        printf("alloc_ptr %zu\nalloc_limit %zu\nroots_top %zu\nroots_limit %zu\n"
               "roots_base %zu\nbarrier_lo %zu\nbarrier_len %zu\nplan %zu\n"
               "remember_all %zu\nsize %zu\n",
               offsetof(numagc_mutator, alloc_ptr), offsetof(numagc_mutator, alloc_limit),
               offsetof(numagc_mutator, roots_top), offsetof(numagc_mutator, roots_limit),
               offsetof(numagc_mutator, roots_base), offsetof(numagc_mutator, barrier_lo),
               offsetof(numagc_mutator, barrier_len), offsetof(numagc_mutator, plan),
               offsetof(numagc_mutator, remember_all), sizeof(numagc_mutator));
        return 0;
    }
    if (argc > 1) DEPTH = atoi(argv[1]);
    if (DEPTH < 5 || DEPTH > 22) {
        fprintf(stderr, "depth must be 5..22\n");
        return 2;
    }
    numagc_config *cfg = example_config();
    CHECK(numagc_config_set(cfg, "vprocs", "2"));
    CHECK(numagc_config_set(cfg, "verify", "true"));
    CHECK(numagc_config_set(cfg, "local-heap", "1M"));
    numagc_runtime *rt;
    CHECK(numagc_runtime_new(cfg, &rt));
    CHECK(numagc_config_free(cfg));
    numagc_desc node;
    size_t both[2] = {0, 1};
    CHECK(numagc_register_mixed(rt, "node", 2, both, 2, false, &node));
    /* Ids come in registration order: a compiler that registers its
     * layouts first knows them, and their header words, when it compiles. */
    if (node != NUMAGC_FIRST_DESCRIPTOR_ID) {
        fprintf(stderr, "the first descriptor got id %u, not %u\n", (unsigned)node,
                (unsigned)NUMAGC_FIRST_DESCRIPTOR_ID);
        failures++;
    }
    NODE = numagc_inline_header(node, 2);
    size_t first[1] = {0};
    CHECK(numagc_register_mixed(rt, "cell", 1, first, 1, true, &CELL_DESC));
    PAIR = numagc_inline_header(node, 2); /* two value fields each */
    numagc_desc cons;
    CHECK(numagc_register_mixed(rt, "cons", 2, both, 2, false, &cons));
    CONS = numagc_inline_header(cons, 2);
    CHECK(numagc_run_each(rt, trees, NULL));
    CHECK(numagc_run_each(rt, trees_at, NULL));
    CHECK(numagc_run_each(rt, pair_lists, NULL));
    CHECK(numagc_run_on(rt, 0, misuse, NULL));
    CHECK(numagc_runtime_free(rt));
    if (failures > 0) {
        fprintf(stderr, "compiled: %d check(s) failed\n", failures);
        return 1;
    }
    printf("compiled: all checks passed (depth %d)\n", DEPTH);
    return 0;
}
