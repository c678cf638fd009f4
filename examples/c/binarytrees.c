/*
 * binarytrees.c: the binarytrees benchmark
 * (crates/numagc-bench/src/compiled/binarytrees.rs) written in C as a
 * compiler would emit it against numagc_inline.h: `make` is register code
 * (the allocation pointer and the root stack's top passed to every call,
 * the allocation pointer returned with the tree; the left subtree in a
 * frame slot across the right one's build, and the right one in a slot of
 * its own only when the node's allocation takes its slow path). The same
 * trees, forks and split of the iterations over the vprocs as numagc's
 * program: the stretch and long-lived trees' top 3 levels forked with
 * numagc_par2, the long-lived tree in a global root, each vproc its share
 * of every depth's iterations (numagc_run_each).
 *
 *   cargo build --release -p numagc-capi
 *   cc -std=c11 -O2 -Wall -Wextra -Iinclude examples/c/binarytrees.c \
 *      -Ltarget/release -l:libnumagc.a -lpthread -ldl -lm -o binarytrees
 *   ./binarytrees DEPTH [VPROCS]     (NUMAGC_* settings apply)
 *
 * Prints the Benchmarks Game's output, the lines numagc bench prints, and
 * exits 0 when every count is the number of nodes of its trees; 1 (with
 * a message) otherwise or on any error.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MIN_DEPTH 4
#define PAR_LEVELS 3

/* The header word of a node: the runtime's first descriptor, a constant a
 * compiler would emit (main checks what registration returns). */
#define NODE numagc_inline_header(NUMAGC_FIRST_DESCRIPTOR_ID, 2)

/* Register code returns a tree and the allocation pointer (bench.h's
 * `at`); obj 0: a slow path failed, its status in at_status. */

static at make(numagc_mutator *m, size_t hp, uint64_t *sp, int depth);

/* The node of the left subtree in the slot at sp and r, through the
 * allocation's slow path: r in a slot at top across it. */
static at node_slow(numagc_mutator *m, size_t hp, uint64_t *sp, uint64_t *top, uint64_t r) {
    at t = {0, hp};
    uint64_t *above = bench_push_at(m, top, 1);
    if (above == NULL) return t;
    top[0] = r;
    uint64_t o;
    int rc = numagc_alloc_at(m, &t.hp, above, NODE, 2, &o);
    if (rc != NUMAGC_OK) {
        at_status = rc;
        return t;
    }
    numagc_inline_init(o, 0, sp[0]);
    numagc_inline_init(o, 1, top[0]);
    t.obj = o;
    return t;
}

static at make_inner(numagc_mutator *m, size_t hp, uint64_t *sp, int depth);

/* A leaf is allocated at once; an inner node goes on in make_inner, a
 * tail call (the shrink-wrapping of parfib.c's seq). */
static at make(numagc_mutator *m, size_t hp, uint64_t *sp, int depth) {
    if (depth > 0) return make_inner(m, hp, sp, depth);
    at t = {0, hp};
    uint64_t o;
    int rc = numagc_alloc_at(m, &t.hp, sp, NODE, 2, &o);
    if (__builtin_expect(rc != NUMAGC_OK, 0)) {
        at_status = rc;
        return t;
    }
    numagc_inline_init(o, 0, NUMAGC_NIL);
    numagc_inline_init(o, 1, NUMAGC_NIL);
    t.obj = o;
    return t;
}

/* An inner node: the left subtree in a frame slot across the right one's
 * build. */
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
    /* The fast path inline; r needs a slot only on the slow path. */
    size_t p = r.hp, next = p + 3 * 8;
    if (__builtin_expect(next > numagc_inline_limit(m), 0)) return node_slow(m, r.hp, sp, top, r.obj);
    __builtin_prefetch((const void *)(next + NUMAGC_ALLOC_PREFETCH_DISTANCE), 1, 3);
    *(uint64_t *)p = NODE;
    numagc_inline_init(p, 0, sp[0]);
    numagc_inline_init(p, 1, r.obj);
    t.obj = p;
    t.hp = next;
    return t;
}

/* make from code on the record: the registers loaded and stored back. */
static int make_tree(numagc_mutator *m, int depth, uint64_t *out) {
    uint64_t *sp = numagc_regs_sp(m);
    at t = make(m, numagc_regs_hp(m), sp, depth);
    if (t.obj == 0) {
        numagc_regs_store(m, numagc_regs_hp(m), sp);
        return at_status;
    }
    numagc_regs_store(m, t.hp, sp);
    *out = t.obj;
    return NUMAGC_OK;
}

/* Nodes of the tree t (nothing collects during the walk). */
static uint64_t check(uint64_t t) {
    uint64_t l = numagc_inline_field(t, 0);
    if (!numagc_inline_word_is_ptr(l)) return 1;
    return 1 + check(l) + check(numagc_inline_field(t, 1));
}

static int make_par(numagc_scope *s, int depth, int levels, uint64_t *out);

typedef struct {
    int depth, levels;
} par_args;

static int par_task(numagc_scope *s, const numagc_value *env, size_t n, void *ud,
                    numagc_value *result) {
    (void)env;
    (void)n;
    const par_args *a = ud;
    uint64_t w;
    int rc = make_par(s, a->depth, a->levels, &w);
    if (rc != NUMAGC_OK) return rc;
    return numagc_word_value(s, w, result);
}

/* make with its top `levels` levels forked. */
static int make_par(numagc_scope *s, int depth, int levels, uint64_t *out) {
    numagc_mutator *m;
    int rc = numagc_mutator_get(s, &m);
    if (rc != NUMAGC_OK) return rc;
    if (levels == 0 || depth == 0) return make_tree(m, depth, out);
    par_args a = {depth - 1, levels - 1};
    numagc_value l, r;
    if ((rc = numagc_par2(s, NULL, 0, par_task, &a, par_task, &a, &l, &r)) != NUMAGC_OK) return rc;
    /* Both subtrees are handles (roots) across the allocation. */
    uint64_t t, lw, rw;
    if ((rc = numagc_inline_alloc(m, NODE, 2, &t)) != NUMAGC_OK) return rc;
    if ((rc = numagc_value_word(s, l, &lw)) != NUMAGC_OK) return rc;
    if ((rc = numagc_value_word(s, r, &rw)) != NUMAGC_OK) return rc;
    numagc_inline_init(t, 0, lw);
    numagc_inline_init(t, 1, rw);
    *out = t;
    return NUMAGC_OK;
}

typedef struct {
    int max_depth;
    size_t vprocs;
    uint64_t stretch, long_lived;
    numagc_global keep;
    uint64_t *sums; /* vprocs rows of the depths' sums */
} job;

static int stretch(numagc_scope *s, void *ud) {
    job *j = ud;
    uint64_t t = 0;
    int rc = make_par(s, j->max_depth + 1, PAR_LEVELS, &t);
    if (rc == NUMAGC_OK) j->stretch = check(t);
    return rc;
}

static int long_lived(numagc_scope *s, void *ud) {
    job *j = ud;
    uint64_t t = 0;
    numagc_value v;
    int rc = make_par(s, j->max_depth, PAR_LEVELS, &t);
    if (rc == NUMAGC_OK) rc = numagc_word_value(s, t, &v);
    if (rc == NUMAGC_OK) rc = numagc_global_new(s, v, &j->keep);
    return rc;
}

static int levels(int max_depth) { return (max_depth - MIN_DEPTH) / 2 + 1; }

static int iterations(numagc_scope *s, void *ud) {
    job *j = ud;
    size_t me, n;
    numagc_mutator *m;
    int rc = numagc_scope_vproc(s, &me);
    if (rc == NUMAGC_OK) rc = numagc_scope_vprocs(s, &n);
    if (rc == NUMAGC_OK) rc = numagc_mutator_get(s, &m);
    if (rc != NUMAGC_OK) return rc;
    int k = 0;
    for (int d = MIN_DEPTH; d <= j->max_depth; d += 2, k++) {
        uint64_t its = UINT64_C(1) << (j->max_depth - d + MIN_DEPTH), sum = 0;
        for (uint64_t i = me; i < its; i += n) {
            uint64_t t = 0;
            if ((rc = make_tree(m, d, &t)) != NUMAGC_OK) return rc;
            sum += check(t);
        }
        j->sums[me * (size_t)levels(j->max_depth) + (size_t)k] = sum;
    }
    return NUMAGC_OK;
}

static int long_lived_check(numagc_scope *s, void *ud) {
    job *j = ud;
    numagc_value v;
    uint64_t w;
    int rc = numagc_global_get(s, j->keep, &v);
    if (rc == NUMAGC_OK) rc = numagc_value_word(s, v, &w);
    if (rc == NUMAGC_OK) j->long_lived = check(w);
    return rc;
}

static int fail(const char *what, int rc) { return bench_fail("binarytrees", what, rc); }

static uint64_t nodes(int depth) { return (UINT64_C(1) << (depth + 1)) - 1; }

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: binarytrees DEPTH [VPROCS]\n");
        return 2;
    }
    long long depth;
    if (bench_int_arg("binarytrees", "DEPTH", argv[1], MIN_DEPTH, 28, &depth)) return 2;
    static const char *const names[1] = {"tree-node"};
    static const size_t fields[1] = {2};
    numagc_runtime *rt = NULL;
    if (bench_runtime("binarytrees", argc == 3 ? argv[2] : NULL, names, fields, 1, &rt) != 0)
        return 1;
    int rc;
    job j = {0};
    j.max_depth = (int)depth;
    if ((rc = numagc_runtime_vprocs(rt, &j.vprocs)) != NUMAGC_OK) return fail("vprocs", rc);
    j.sums = calloc(j.vprocs * (size_t)levels(j.max_depth), sizeof(uint64_t));
    if (j.sums == NULL) {
        fprintf(stderr, "binarytrees: out of memory\n");
        return 1;
    }
    if ((rc = numagc_run_on(rt, 0, stretch, &j)) != NUMAGC_OK) return fail("stretch tree", rc);
    if ((rc = numagc_run_on(rt, 0, long_lived, &j)) != NUMAGC_OK) return fail("long-lived tree", rc);
    if ((rc = numagc_run_each(rt, iterations, &j)) != NUMAGC_OK) return fail("iterations", rc);
    if ((rc = numagc_run_on(rt, 0, long_lived_check, &j)) != NUMAGC_OK)
        return fail("long-lived check", rc);
    numagc_global_free(j.keep);
    numagc_runtime_free(rt);

    int ok = j.stretch == nodes(j.max_depth + 1) && j.long_lived == nodes(j.max_depth);
    printf("stretch tree of depth %d\t check: %llu\n", j.max_depth + 1,
           (unsigned long long)j.stretch);
    int k = 0;
    for (int d = MIN_DEPTH; d <= j.max_depth; d += 2, k++) {
        uint64_t its = UINT64_C(1) << (j.max_depth - d + MIN_DEPTH), sum = 0;
        for (size_t v = 0; v < j.vprocs; v++) sum += j.sums[v * (size_t)levels(j.max_depth) + (size_t)k];
        ok = ok && sum == its * nodes(d);
        printf("%llu\t trees of depth %d\t check: %llu\n", (unsigned long long)its, d,
               (unsigned long long)sum);
    }
    printf("long lived tree of depth %d\t check: %llu\n", j.max_depth,
           (unsigned long long)j.long_lived);
    free(j.sums);
    if (!ok) {
        fprintf(stderr, "binarytrees: a count is not the number of nodes of its trees\n");
        return 1;
    }
    return 0;
}
