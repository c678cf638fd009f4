/*
 * parfib.c: the parfib benchmark (crates/numagc-bench/src/compiled/parfib.rs)
 * written in C as a compiler would emit it against numagc_inline.h: every
 * call returns its result boxed in a heap cell; at or below the threshold
 * the calls are register code (the allocation pointer and the root
 * stack's top passed to every call and the allocation pointer returned
 * with the box, the first call's box in a frame slot across the second
 * call); above it the two calls are forked with numagc_fork (the fork of
 * compiled code, on words), the closure's environment a boxed n.
 *
 *   cargo build --release -p numagc-capi
 *   cc -std=c11 -O2 -Wall -Wextra -Iinclude examples/c/parfib.c \
 *      -Ltarget/release -l:libnumagc.a -lpthread -ldl -lm -o parfib
 *   ./parfib N THRESHOLD [VPROCS]     (NUMAGC_* settings apply)
 *
 * Prints "parfib N (threshold T) = F", the line numagc bench prints, and
 * exits 0 when F is the N-th Fibonacci number computed iteratively; 1
 * (with a message) otherwise or on any error.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The header word of a box: the runtime's first descriptor, a constant a
 * compiler would emit (main checks what registration returns). */
#define CELL numagc_inline_header(NUMAGC_FIRST_DESCRIPTOR_ID, 1)

/* Register code returns a box and the allocation pointer (bench.h's
 * `at`); obj 0: a slow path failed, its status in at_status. */

/* box_at through the allocation's slow path, out of line: a tail call of
 * box_at, so that a leaf sets up no stack frame for it. */
__attribute__((noinline, cold)) static at box_at_slow(numagc_mutator *m, size_t hp,
                                                      uint64_t *sp, uint64_t x) {
    at r = {0, hp};
    uint64_t b;
    int rc = numagc_alloc_at(m, &r.hp, sp, CELL, 1, &b);
    if (rc != NUMAGC_OK) {
        at_status = rc;
        return r;
    }
    numagc_inline_init(b, 0, x);
    r.obj = b;
    return r;
}

/* A box holding the immediate x at hp. */
static inline at box_at(numagc_mutator *m, size_t hp, uint64_t *sp, uint64_t x) {
    uint64_t b = numagc_try_alloc_at(m, &hp, CELL, 1);
    if (__builtin_expect(b == 0, 0)) return box_at_slow(m, hp, sp, x);
    numagc_inline_init(b, 0, x);
    return (at){b, hp};
}

static at seq_inner(numagc_mutator *m, size_t hp, uint64_t *sp, int64_t n);

/* seq n: the sequential part, register code. A leaf returns its box at
 * once; an inner call goes on in seq_inner, a tail call, so that a leaf
 * saves none of the registers an inner call needs (the shrink-wrapping of
 * a native code generator, which gcc does not do here on its own). */
static at seq(numagc_mutator *m, size_t hp, uint64_t *sp, int64_t n) {
    if (n < 2) return box_at(m, hp, sp, numagc_inline_word_int(n));
    return seq_inner(m, hp, sp, n);
}

/* An inner call: the first box in a frame slot across the second call. */
__attribute__((noinline)) static at seq_inner(numagc_mutator *m, size_t hp, uint64_t *sp,
                                              int64_t n) {
    at x = seq(m, hp, sp, n - 1);
    if (__builtin_expect(x.obj == 0, 0)) return x;
    uint64_t *top = bench_push_at(m, sp, 1);
    if (top == NULL) {
        x.obj = 0;
        return x;
    }
    sp[0] = x.obj;
    at y = seq(m, x.hp, top, n - 2);
    if (__builtin_expect(y.obj == 0, 0)) return y;
    /* Tagged integers 2a+1 and 2b+1 add to 2(a+b)+1 less one; x is
     * reloaded from its slot. */
    uint64_t s = numagc_inline_field(sp[0], 0) + numagc_inline_field(y.obj, 0) - 1;
    return box_at(m, y.hp, sp, s);
}

static int pfib(numagc_mutator *m, int64_t n, int64_t threshold, uint64_t *out);

typedef struct {
    int64_t threshold;
    int64_t minus;
} side;

/* A forked call: pfib (n - minus), n the boxed environment word. Tasks of
 * numagc_fork are compiled code: they get the mutator record of the vproc
 * that runs them and answer a word. */
static int task(numagc_mutator *m, const uint64_t *env, size_t n, void *ud, uint64_t *result) {
    (void)n;
    const side *sd = ud;
    int64_t k = numagc_inline_word_to_int(numagc_inline_field(env[0], 0));
    return pfib(m, k - sd->minus, sd->threshold, result);
}

/* pfib n: register code at or below the threshold, a fork above it. The
 * box in *out is valid until the next call that may collect. */
static int pfib(numagc_mutator *m, int64_t n, int64_t threshold, uint64_t *out) {
    int rc;
    if (n <= threshold) {
        uint64_t *sp = numagc_regs_sp(m);
        at r = seq(m, numagc_regs_hp(m), sp, n);
        if (r.obj == 0) {
            /* The record is current; its top is that of the failed call. */
            numagc_regs_store(m, numagc_regs_hp(m), sp);
            return at_status;
        }
        numagc_regs_store(m, r.hp, sp);
        *out = r.obj;
        return NUMAGC_OK;
    }
    uint64_t env;
    if ((rc = numagc_inline_alloc(m, CELL, 1, &env)) != NUMAGC_OK) return rc;
    numagc_inline_init(env, 0, numagc_inline_word_int(n));
    side left = {threshold, 1}, right = {threshold, 2};
    uint64_t x, y;
    rc = numagc_fork(m, &env, 1, task, &left, task, &right, &x, &y);
    if (rc != NUMAGC_OK) return rc;
    /* x and y are valid until the allocation below. */
    uint64_t sum = numagc_inline_field(x, 0) + numagc_inline_field(y, 0) - 1;
    uint64_t b;
    if ((rc = numagc_inline_alloc(m, CELL, 1, &b)) != NUMAGC_OK) return rc;
    numagc_inline_init(b, 0, sum);
    *out = b;
    return NUMAGC_OK;
}

typedef struct {
    int64_t n, threshold, answer;
} job;

static int run(numagc_scope *s, void *ud) {
    job *j = ud;
    numagc_mutator *m;
    int rc = numagc_mutator_get(s, &m);
    if (rc != NUMAGC_OK) return rc;
    uint64_t b;
    rc = pfib(m, j->n, j->threshold, &b);
    if (rc == NUMAGC_OK) j->answer = numagc_inline_word_to_int(numagc_inline_field(b, 0));
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: parfib N THRESHOLD [VPROCS]\n");
        return 2;
    }
    long long n, threshold;
    if (bench_int_arg("parfib", "N", argv[1], 0, 80, &n) ||
        bench_int_arg("parfib", "THRESHOLD", argv[2], 1, 80, &threshold))
        return 2;
    static const char *const names[1] = {"int-box"};
    static const size_t fields[1] = {1};
    numagc_runtime *rt = NULL;
    if (bench_runtime("parfib", argc == 4 ? argv[3] : NULL, names, fields, 1, &rt) != 0) return 1;
    int rc;
    job j = {n, threshold, 0};
    if ((rc = numagc_run_on(rt, 0, run, &j)) != NUMAGC_OK) return bench_fail("parfib", "parfib", rc);
    numagc_runtime_free(rt);
    printf("parfib %lld (threshold %lld) = %lld\n", n, threshold, (long long)j.answer);
    /* The independent answer: Fibonacci iteratively. */
    int64_t a = 0, b = 1;
    for (long long i = 0; i < n; i++) {
        int64_t t = a + b;
        a = b;
        b = t;
    }
    if (j.answer != a) {
        fprintf(stderr, "parfib: got %lld, fib %lld is %lld\n", (long long)j.answer, n,
                (long long)a);
        return 1;
    }
    return 0;
}
