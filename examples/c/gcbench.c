/*
 * gcbench.c: Boehm's GCBench (crates/numagc-bench/src/benchmarks/gcbench.rs;
 * the compiled program crates/numagc-bench/src/compiled/gcbench.rs) written
 * in C as a compiler would emit it against numagc_inline.h. The trees are
 * register code (`make` as binarytrees.c's, a node of four fields: the two
 * subtrees and GCBench's two integers `i` and `j`, which stay 0). The same
 * work and parallel structure as numagc's program: the stretch and
 * long-lived trees with the subtrees deeper than FORK_DEPTH forked with
 * numagc_par2; for each depth d = 4, 6, ..., MAX_DEPTH, two phases ("top
 * down" and "bottom up", both built children first, as numagc's young
 * objects are immutable) of NumIters(d) trees each, spread over the vprocs
 * by a fork-join reduction whose leaves build about GRAIN nodes' worth of
 * trees one after the other and return their counts in a `tree-counts`
 * object (four raw fields). The long-lived tree and array (ARRAY_SIZE
 * doubles, half of them 1/i, in one raw object of the shared heap) are
 * handles of the run's scope.
 *
 *   cargo build --release -p numagc-capi
 *   cc -std=c11 -O2 -Wall -Wextra -Iinclude examples/c/gcbench.c \
 *      -Ltarget/release -l:libnumagc.a -lpthread -ldl -lm -o gcbench
 *   ./gcbench STRETCH_DEPTH LONG_LIVED_DEPTH MAX_DEPTH ARRAY_SIZE GRAIN [VPROCS]
 *
 * Prints numagc bench's lines for gcbench and exits 0 when every tree has
 * 2^(d+1)-1 nodes, every phase NumIters(d) trees and the array its
 * formula's values; 1 (with a message) otherwise or on any error.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_TREE_DEPTH 4
#define FORK_DEPTH 12

/* The header words: the runtime's first two descriptors (main checks what
 * registration returns). */
#define NODE numagc_inline_header(NUMAGC_FIRST_DESCRIPTOR_ID, 4)
#define COUNTS numagc_inline_header(NUMAGC_FIRST_DESCRIPTOR_ID + 1, 4)

static uint64_t tree_size(int depth) { return (UINT64_C(1) << (depth + 1)) - 1; }
static uint64_t num_iters(int stretch, int depth) {
    return 2 * tree_size(stretch) / tree_size(depth);
}

/* A node's fields: its children and GCBench's i and j (raw, 0). */
static inline uint64_t init_node(uint64_t t, uint64_t l, uint64_t r) {
    numagc_inline_init(t, 0, l);
    numagc_inline_init(t, 1, r);
    numagc_inline_init(t, 2, 0);
    numagc_inline_init(t, 3, 0);
    return t;
}

/* ---- register code: MakeTree ------------------------------------------- */

static at make(numagc_mutator *m, size_t hp, uint64_t *sp, int depth);

/* The node of the left subtree in the slot at sp and r, through the
 * allocation's slow path: r in a slot at top across it. */
static at node_slow(numagc_mutator *m, size_t hp, uint64_t *sp, uint64_t *top, uint64_t r) {
    at t = {0, hp};
    uint64_t *above = bench_push_at(m, top, 1);
    if (above == NULL) return t;
    top[0] = r;
    uint64_t o;
    int rc = numagc_alloc_at(m, &t.hp, above, NODE, 4, &o);
    if (rc != NUMAGC_OK) {
        at_status = rc;
        return t;
    }
    t.obj = init_node(o, sp[0], top[0]);
    return t;
}

static at make_inner(numagc_mutator *m, size_t hp, uint64_t *sp, int depth);

/* A leaf at once; an inner node in make_inner (a tail call). */
static at make(numagc_mutator *m, size_t hp, uint64_t *sp, int depth) {
    if (depth > 0) return make_inner(m, hp, sp, depth);
    at t = {0, hp};
    uint64_t o;
    int rc = numagc_alloc_at(m, &t.hp, sp, NODE, 4, &o);
    if (__builtin_expect(rc != NUMAGC_OK, 0)) {
        at_status = rc;
        return t;
    }
    t.obj = init_node(o, NUMAGC_NIL, NUMAGC_NIL);
    return t;
}

/* An inner node: the left subtree in a frame slot across the right one's
 * build; the right one in a slot only on the allocation's slow path. */
__attribute__((noinline)) static at make_inner(numagc_mutator *m, size_t hp, uint64_t *sp,
                                               int depth) {
    at t = {0, hp};
    at l = make(m, hp, sp, depth - 1);
    if (__builtin_expect(l.obj == 0, 0)) return l;
    uint64_t *top = bench_push_at(m, sp, 1);
    if (top == NULL) {
        l.obj = 0;
        return l;
    }
    sp[0] = l.obj;
    at r = make(m, l.hp, top, depth - 1);
    if (__builtin_expect(r.obj == 0, 0)) return r;
    size_t p = r.hp, next = p + 5 * 8;
    if (__builtin_expect(next > numagc_inline_limit(m), 0)) return node_slow(m, r.hp, sp, top, r.obj);
    __builtin_prefetch((const void *)(next + NUMAGC_ALLOC_PREFETCH_DISTANCE), 1, 3);
    *(uint64_t *)p = NODE;
    t.obj = init_node(p, sp[0], r.obj);
    t.hp = next;
    return t;
}

/* make from code on the record: the registers loaded and stored back. */
static int make_tree(numagc_mutator *m, int depth, uint64_t *out) {
    uint64_t *sp = numagc_regs_sp(m);
    at t = make(m, numagc_regs_hp(m), sp, depth);
    numagc_regs_store(m, t.obj == 0 ? numagc_regs_hp(m) : t.hp, sp);
    if (t.obj == 0) return at_status;
    *out = t.obj;
    return NUMAGC_OK;
}

/* Nodes of the tree t (nothing collects during the walk). */
static uint64_t count_nodes(uint64_t t) {
    uint64_t l = numagc_inline_field(t, 0);
    if (!numagc_inline_word_is_ptr(l)) return 1;
    return 1 + count_nodes(l) + count_nodes(numagc_inline_field(t, 1));
}

/* ---- the big trees: the levels above FORK_DEPTH forked ------------------ */

static int make_big(numagc_scope *s, int depth, uint64_t *out);

static int big_task(numagc_scope *s, const numagc_value *env, size_t n, void *ud,
                    numagc_value *result) {
    (void)env;
    (void)n;
    uint64_t w;
    int rc = make_big(s, *(const int *)ud, &w);
    if (rc != NUMAGC_OK) return rc;
    return numagc_word_value(s, w, result);
}

static int make_big(numagc_scope *s, int depth, uint64_t *out) {
    numagc_mutator *m;
    int rc = numagc_mutator_get(s, &m);
    if (rc != NUMAGC_OK) return rc;
    if (depth <= FORK_DEPTH) return make_tree(m, depth, out);
    int below = depth - 1;
    numagc_value l, r;
    if ((rc = numagc_par2(s, NULL, 0, big_task, &below, big_task, &below, &l, &r)) != NUMAGC_OK)
        return rc;
    /* Both subtrees are handles (roots) across the allocation. */
    uint64_t t, lw, rw;
    if ((rc = numagc_inline_alloc(m, NODE, 4, &t)) != NUMAGC_OK) return rc;
    if ((rc = numagc_value_word(s, l, &lw)) != NUMAGC_OK) return rc;
    if ((rc = numagc_value_word(s, r, &rw)) != NUMAGC_OK) return rc;
    *out = init_node(t, lw, rw);
    return NUMAGC_OK;
}

/* ---- the phases: a fork-join reduction over the trees -------------------- */

/* What a `tree-counts` object holds. */
typedef struct {
    uint64_t trees, nodes, min_nodes, max_nodes;
} phase_count;

static phase_count join(phase_count a, phase_count b) {
    phase_count c = {a.trees + b.trees, a.nodes + b.nodes,
                     a.min_nodes < b.min_nodes ? a.min_nodes : b.min_nodes,
                     a.max_nodes > b.max_nodes ? a.max_nodes : b.max_nodes};
    return c;
}

static int counts_object(numagc_mutator *m, phase_count c, uint64_t *out) {
    uint64_t o;
    int rc = numagc_inline_alloc(m, COUNTS, 4, &o);
    if (rc != NUMAGC_OK) return rc;
    numagc_inline_init(o, 0, c.trees);
    numagc_inline_init(o, 1, c.nodes);
    numagc_inline_init(o, 2, c.min_nodes);
    numagc_inline_init(o, 3, c.max_nodes);
    *out = o;
    return NUMAGC_OK;
}

static phase_count read_counts(uint64_t o) {
    phase_count c = {numagc_inline_field(o, 0), numagc_inline_field(o, 1),
                     numagc_inline_field(o, 2), numagc_inline_field(o, 3)};
    return c;
}

/* The trees lo..hi of a phase at `depth`, leaves of per_task trees. */
typedef struct {
    int depth;
    uint64_t per_task, lo, hi;
} range;

static int reduce(numagc_scope *s, range g, uint64_t *out);

static int reduce_task(numagc_scope *s, const numagc_value *env, size_t n, void *ud,
                       numagc_value *result) {
    (void)env;
    (void)n;
    uint64_t w;
    int rc = reduce(s, *(const range *)ud, &w);
    if (rc != NUMAGC_OK) return rc;
    return numagc_word_value(s, w, result);
}

/* A `tree-counts` object of the trees g.lo..g.hi, halves forked. */
static int reduce(numagc_scope *s, range g, uint64_t *out) {
    numagc_mutator *m;
    int rc = numagc_mutator_get(s, &m);
    if (rc != NUMAGC_OK) return rc;
    if (g.hi - g.lo <= g.per_task) {
        phase_count c = {0, 0, UINT64_MAX, 0};
        for (uint64_t i = g.lo; i < g.hi; i++) {
            uint64_t t = 0;
            if ((rc = make_tree(m, g.depth, &t)) != NUMAGC_OK) return rc;
            uint64_t nodes = count_nodes(t);
            phase_count one = {1, nodes, nodes, nodes};
            c = join(c, one);
        }
        return counts_object(m, c, out);
    }
    uint64_t mid = g.lo + (g.hi - g.lo) / 2;
    range a = g, b = g;
    a.hi = mid;
    b.lo = mid;
    numagc_value x, y;
    if ((rc = numagc_par2(s, NULL, 0, reduce_task, &a, reduce_task, &b, &x, &y)) != NUMAGC_OK)
        return rc;
    uint64_t xw, yw;
    if ((rc = numagc_value_word(s, x, &xw)) != NUMAGC_OK) return rc;
    if ((rc = numagc_value_word(s, y, &yw)) != NUMAGC_OK) return rc;
    /* Read before the allocation, which may move them. */
    return counts_object(m, join(read_counts(xw), read_counts(yw)), out);
}

/* TimeConstruction's loop for one phase at `depth`. */
static int construct(numagc_scope *s, int stretch, int depth, uint64_t grain, phase_count *out) {
    uint64_t per_task = grain / tree_size(depth);
    range g = {depth, per_task == 0 ? 1 : per_task, 0, num_iters(stretch, depth)};
    uint64_t w = 0;
    numagc_frame f;
    int rc = numagc_frame_enter(s, &f); /* the reduction's handles go with it */
    if (rc != NUMAGC_OK) return rc;
    rc = reduce(s, g, &w);
    if (rc == NUMAGC_OK) *out = read_counts(w);
    int left = numagc_frame_leave(s, f);
    return rc != NUMAGC_OK ? rc : left;
}

/* ---- the program ----------------------------------------------------------- */

#define MAX_PHASES 16

typedef struct {
    int stretch, long_lived_depth, max_depth;
    uint64_t array_size, grain;
    uint64_t stretch_nodes, long_lived_nodes;
    int phases;
    phase_count top_down[MAX_PHASES], bottom_up[MAX_PHASES];
    int array_ok, array_1000;
} job;

static int run(numagc_scope *s, void *ud) {
    job *j = ud;
    numagc_mutator *m;
    int rc = numagc_mutator_get(s, &m);
    if (rc != NUMAGC_OK) return rc;
    /* Stretch the memory space quickly. */
    uint64_t t = 0;
    numagc_frame f;
    if ((rc = numagc_frame_enter(s, &f)) != NUMAGC_OK) return rc;
    rc = make_big(s, j->stretch, &t);
    if (rc == NUMAGC_OK) j->stretch_nodes = count_nodes(t);
    int left = numagc_frame_leave(s, f);
    if (rc != NUMAGC_OK || left != NUMAGC_OK) return rc != NUMAGC_OK ? rc : left;

    /* The long-lived data, handles of this scope for the whole run. */
    numagc_value long_lived, array;
    if ((rc = make_big(s, j->long_lived_depth, &t)) != NUMAGC_OK) return rc;
    if ((rc = numagc_word_value(s, t, &long_lived)) != NUMAGC_OK) return rc;
    uint64_t a;
    rc = numagc_alloc_shared(m, numagc_inline_header(NUMAGC_RAW_ID, j->array_size), &a);
    if (rc != NUMAGC_OK) return rc;
    for (uint64_t i = 0; i < j->array_size / 2; i++) {
        double x = 1.0 / (double)i;
        uint64_t bits;
        memcpy(&bits, &x, sizeof bits);
        numagc_inline_store_raw(a, i, bits);
    }
    if ((rc = numagc_word_value(s, a, &array)) != NUMAGC_OK) return rc;

    for (int d = MIN_TREE_DEPTH; d <= j->max_depth; d += 2, j->phases++) {
        rc = construct(s, j->stretch, d, j->grain, &j->top_down[j->phases]);
        if (rc == NUMAGC_OK) rc = construct(s, j->stretch, d, j->grain, &j->bottom_up[j->phases]);
        if (rc != NUMAGC_OK) return rc;
    }

    if ((rc = numagc_value_word(s, long_lived, &t)) != NUMAGC_OK) return rc;
    j->long_lived_nodes = count_nodes(t);
    if ((rc = numagc_value_word(s, array, &a)) != NUMAGC_OK) return rc;
    j->array_ok = 1;
    for (uint64_t i = 0; i < j->array_size; i++) {
        double want = i < j->array_size / 2 ? 1.0 / (double)i : 0.0, got;
        uint64_t bits = numagc_inline_field(a, i);
        memcpy(&got, &bits, sizeof got);
        if (memcmp(&got, &want, sizeof got) != 0) j->array_ok = 0;
        if (i == 1000) j->array_1000 = got == 1.0 / 1000.0;
    }
    return NUMAGC_OK;
}

static int fail(const char *what, int rc) { return bench_fail("gcbench", what, rc); }

int main(int argc, char **argv) {
    if (argc < 6 || argc > 7) {
        fprintf(stderr,
                "usage: gcbench STRETCH_DEPTH LONG_LIVED_DEPTH MAX_DEPTH ARRAY_SIZE GRAIN [VPROCS]\n");
        return 2;
    }
    /* The ranges of numagc bench's parameters. */
    long long stretch, long_lived, max_depth, array_size, grain;
    if (bench_int_arg("gcbench", "STRETCH_DEPTH", argv[1], 4, 26, &stretch) ||
        bench_int_arg("gcbench", "LONG_LIVED_DEPTH", argv[2], 0, 24, &long_lived) ||
        bench_int_arg("gcbench", "MAX_DEPTH", argv[3], MIN_TREE_DEPTH, 24, &max_depth) ||
        bench_int_arg("gcbench", "ARRAY_SIZE", argv[4], 2002, 1LL << 26, &array_size) ||
        bench_int_arg("gcbench", "GRAIN", argv[5], 1, 1LL << 30, &grain))
        return 2;
    if (max_depth > stretch) {
        fprintf(stderr, "gcbench: MAX_DEPTH %lld exceeds STRETCH_DEPTH %lld (no tree would be built)\n",
                max_depth, stretch);
        return 2;
    }
    static const char *const names[2] = {"gcbench-node", "tree-counts"};
    static const size_t sizes[2] = {4, 4}, values[2] = {2, 0};
    numagc_runtime *rt = NULL;
    if (bench_runtime_layouts("gcbench", argc == 7 ? argv[6] : NULL, names, sizes, values, 2, &rt) !=
        0)
        return 1;
    job j;
    memset(&j, 0, sizeof j);
    j.stretch = (int)stretch;
    j.long_lived_depth = (int)long_lived;
    j.max_depth = (int)max_depth;
    j.array_size = (uint64_t)array_size;
    j.grain = (uint64_t)grain;
    int rc = numagc_run_on(rt, 0, run, &j);
    numagc_runtime_free(rt);
    if (rc != NUMAGC_OK) return fail("run", rc);

    printf("Garbage Collector Test\n");
    printf(" Stretching memory with a binary tree of depth %d: %llu nodes\n", j.stretch,
           (unsigned long long)j.stretch_nodes);
    printf(" Creating a long-lived binary tree of depth %d\n", j.long_lived_depth);
    printf(" Creating a long-lived array of %llu doubles\n", (unsigned long long)j.array_size);
    int ok = j.stretch_nodes == tree_size(j.stretch) &&
             j.long_lived_nodes == tree_size(j.long_lived_depth) && j.array_ok;
    for (int k = 0; k < j.phases; k++) {
        int d = MIN_TREE_DEPTH + 2 * k;
        uint64_t iters = num_iters(j.stretch, d), size = tree_size(d);
        for (int p = 0; p < 2; p++) {
            phase_count c = p == 0 ? j.top_down[k] : j.bottom_up[k];
            ok = ok && c.trees == iters && c.nodes == iters * size && c.min_nodes == size &&
                 c.max_nodes == size;
        }
        printf("Creating %llu trees of depth %d: top down %llu nodes, bottom up %llu nodes\n",
               (unsigned long long)j.top_down[k].trees, d, (unsigned long long)j.top_down[k].nodes,
               (unsigned long long)j.bottom_up[k].nodes);
    }
    printf("Long-lived tree: %llu nodes; array[1000] == 1/1000: %s\n",
           (unsigned long long)j.long_lived_nodes, j.array_1000 ? "true" : "false");
    if (!ok) {
        fprintf(stderr, "gcbench: a count or the array is not what GCBench's formulas give\n");
        return 1;
    }
    return 0;
}
