/*
 * coins.c: the coins benchmark (crates/numagc-bench/src/compiled/coins.rs,
 * version 7 of nofib's coins) written in C as a compiler would emit it
 * against numagc_inline.h: a heap list of (value, quantity) pairs, a new
 * pair and cons cell for every coin paid, allocated together with one
 * bump (numagc_alloc_block_at); the sequential count is register code
 * (the allocation pointer and the root stack's top held in locals, the
 * list's tail in a frame slot across both recursive calls) that returns
 * through the shadow stack, its frames naming their continuation, as
 * GHC's code does and as the Rust program (--api compiled) does; while the
 * depth is above 0 the right branch is forked with numagc_fork (the fork
 * of compiled code, on words).
 *
 *   cargo build --release -p numagc-capi
 *   cc -std=c11 -O2 -Wall -Wextra -Iinclude examples/c/coins.c \
 *      -Ltarget/release -l:libnumagc.a -lpthread -ldl -lm -o coins
 *   ./coins VALUE DEPTH [VPROCS]     (NUMAGC_* settings apply)
 *
 * Prints "coins: ways to pay VALUE (depth DEPTH) = N", the line numagc
 * bench prints, and exits 0 when N is the count of a dynamic program; 1
 * (with a message) otherwise or on any error.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The header words: a pair is the runtime's first descriptor, a cons cell
 * its second (main checks what registration returns). */
#define PAIR numagc_inline_header(NUMAGC_FIRST_DESCRIPTOR_ID, 2)
#define CONS numagc_inline_header(NUMAGC_FIRST_DESCRIPTOR_ID + 1, 2)

static const int64_t COINS[6][2] = {{250, 55}, {100, 88}, {25, 88}, {10, 99}, {5, 122}, {1, 177}};

/* A count and the allocation pointer after it (two registers); hp 0: a
 * slow path failed, its status in at_status (a compiler would raise). */
typedef struct {
    uint64_t n;
    size_t hp;
} cnt;
/* A list and the allocation pointer after it: bench.h's `at`; hp 0:
 * failed (the list may be empty). */

/* The first coin of the cons cell `coins`. */
static inline void head(uint64_t coins, int64_t *c, int64_t *q) {
    uint64_t pair = numagc_inline_field(coins, 0);
    *c = numagc_inline_word_to_int(numagc_inline_field(pair, 0));
    *q = numagc_inline_word_to_int(numagc_inline_field(pair, 1));
}

/* (c, q-1) :: rest, or rest when the last coin of value c was used; rest
 * (the list's tail) is in slot 0 of the frame at sp, whose top is top. */
static inline at pay_one(numagc_mutator *m, size_t hp, uint64_t *sp, uint64_t *top, int64_t c,
                         int64_t q) {
    at r = {0, hp};
    if (q == 1) {
        r.obj = sp[0];
        return r;
    }
    uint64_t pair;
    int rc = numagc_alloc_block_at(m, &r.hp, top, PAIR, 6, &pair);
    if (__builtin_expect(rc != NUMAGC_OK, 0)) {
        at_status = rc;
        r.hp = 0;
        return r;
    }
    uint64_t cell = numagc_inline_place(pair, 3, CONS);
    numagc_inline_init(pair, 0, numagc_inline_word_int(c));
    numagc_inline_init(pair, 1, numagc_inline_word_int(q - 1));
    numagc_inline_init(cell, 0, pair);
    numagc_inline_init(cell, 1, sp[0]);
    r.obj = cell;
    return r;
}

/* The continuations of pay_n's frames, immediates (which the collector
 * skips): [rest, val, AFTER_LEFT] while a left call runs, the right call
 * payN val rest to come; [left, _, AFTER_RIGHT] while a right call runs,
 * left the left call's count, to be added to the right one's. */
#define AFTER_LEFT numagc_inline_word_int(0)
#define AFTER_RIGHT numagc_inline_word_int(1)

/* payN, returning through the shadow stack as GHC's code does (the Rust
 * program's pay_n): where the program calls payN (val - c) coins' it
 * pushes a frame [rest, val, AFTER_LEFT] and goes on with the left call's
 * arguments; where a call returns r at once it pops frames and runs their
 * continuations, until no frame above sp0 is left. */
static cnt pay_n(numagc_mutator *m, size_t hp, uint64_t *sp0, int64_t val, uint64_t coins) {
    uint64_t *sp = sp0;
    for (;;) {
        uint64_t r;
        /* Calls payN val coins until one returns r at once. */
        for (;;) {
            if (val == 0) {
                r = 1;
                break;
            }
            if (!numagc_inline_word_is_ptr(coins)) {
                r = 0;
                break;
            }
            int64_t c, q;
            head(coins, &c, &q);
            uint64_t rest = numagc_inline_field(coins, 1);
            if (c > val) {
                coins = rest;
                continue;
            }
            uint64_t *top = bench_push_at(m, sp, 3);
            if (top == NULL) return (cnt){0, 0};
            sp[0] = rest;
            sp[1] = numagc_inline_word_int(val);
            sp[2] = AFTER_LEFT;
            at lc = pay_one(m, hp, sp, top, c, q);
            if (__builtin_expect(lc.hp == 0, 0)) return (cnt){0, 0};
            hp = lc.hp;
            sp = top;
            val -= c;
            coins = lc.obj;
        }
        /* Returns r to the continuations of the frames. */
        for (;;) {
            if (sp == sp0) return (cnt){r, hp};
            uint64_t *f = sp - 3;
            if (f[2] == AFTER_LEFT) {
                /* The right call; rest is read from its slot (the left
                 * call may have moved it). */
                coins = f[0];
                val = numagc_inline_word_to_int(f[1]);
                f[0] = numagc_inline_word_int((int64_t)r);
                f[2] = AFTER_RIGHT;
                break;
            }
            r += (uint64_t)numagc_inline_word_to_int(f[0]);
            sp = f;
        }
    }
}

static int pay_n_par(numagc_mutator *m, int64_t depth, int64_t val, uint64_t coins, int64_t *out);

typedef struct {
    int64_t depth, left_depth, val, c, q;
} fork_args;

/* The tasks are compiled code on words (numagc_fork): the record of the
 * vproc that runs them, the coin list as the environment's word, the
 * count answered as an immediate. */

/* The left branch: pays the first coin (the tail of the list from the
 * environment in a frame slot across the allocation), then counts on. */
static int left_task(numagc_mutator *m, const uint64_t *env, size_t n, void *ud, uint64_t *result) {
    (void)n;
    const fork_args *a = ud;
    uint64_t *sp = numagc_regs_sp(m);
    uint64_t *top = numagc_push_at(m, sp, 1);
    if (top == NULL) return NUMAGC_ERR_INVALID_ARGUMENT;
    sp[0] = numagc_inline_field(env[0], 1);
    at lc = pay_one(m, numagc_regs_hp(m), sp, top, a->c, a->q);
    if (lc.hp == 0) {
        numagc_regs_store(m, numagc_regs_hp(m), sp);
        return at_status;
    }
    numagc_regs_store(m, lc.hp, sp);
    int64_t k;
    int rc = pay_n_par(m, a->left_depth, a->val - a->c, lc.obj, &k);
    if (rc != NUMAGC_OK) return rc;
    *result = numagc_inline_word_int(k);
    return NUMAGC_OK;
}

/* The right branch: the rest of the list. */
static int right_task(numagc_mutator *m, const uint64_t *env, size_t n, void *ud, uint64_t *result) {
    (void)n;
    const fork_args *a = ud;
    int64_t k;
    int rc = pay_n_par(m, a->depth - 1, a->val, numagc_inline_field(env[0], 1), &k);
    if (rc != NUMAGC_OK) return rc;
    *result = numagc_inline_word_int(k);
    return NUMAGC_OK;
}

/* payN_par: forks the right branch while depth > 0. `coins` is valid
 * until the next call that may collect; the record is current. */
static int pay_n_par(numagc_mutator *m, int64_t depth, int64_t val, uint64_t coins, int64_t *out) {
    if (depth == 0) {
        uint64_t *sp = numagc_regs_sp(m);
        cnt r = pay_n(m, numagc_regs_hp(m), sp, val, coins);
        if (r.hp == 0) {
            numagc_regs_store(m, numagc_regs_hp(m), sp);
            return at_status;
        }
        numagc_regs_store(m, r.hp, sp);
        *out = (int64_t)r.n;
        return NUMAGC_OK;
    }
    for (;;) {
        if (val == 0) {
            *out = 1;
            return NUMAGC_OK;
        }
        if (!numagc_inline_word_is_ptr(coins)) {
            *out = 0;
            return NUMAGC_OK;
        }
        int64_t c, q;
        head(coins, &c, &q);
        if (c <= val) {
            fork_args a = {depth, q == 1 ? depth - 1 : depth, val, c, q};
            uint64_t x, y;
            int rc = numagc_fork(m, &coins, 1, left_task, &a, right_task, &a, &x, &y);
            if (rc != NUMAGC_OK) return rc;
            *out = numagc_inline_word_to_int(x) + numagc_inline_word_to_int(y);
            return NUMAGC_OK;
        }
        coins = numagc_inline_field(coins, 1);
    }
}

typedef struct {
    int64_t val, depth, ways;
} job;

/* The coin list on the heap (register code), then the count. */
static int run(numagc_scope *s, void *ud) {
    job *j = ud;
    numagc_mutator *m;
    int rc = numagc_mutator_get(s, &m);
    if (rc != NUMAGC_OK) return rc;
    uint64_t *sp = numagc_regs_sp(m);
    size_t hp = numagc_regs_hp(m);
    uint64_t *top = numagc_push_at(m, sp, 1);
    if (top == NULL) return NUMAGC_ERR_INVALID_ARGUMENT;
    for (int i = 5; i >= 0; i--) {
        uint64_t pair;
        if ((rc = numagc_alloc_block_at(m, &hp, top, PAIR, 6, &pair)) != NUMAGC_OK) {
            numagc_regs_store(m, numagc_regs_hp(m), sp);
            return rc;
        }
        uint64_t cell = numagc_inline_place(pair, 3, CONS);
        numagc_inline_init(pair, 0, numagc_inline_word_int(COINS[i][0]));
        numagc_inline_init(pair, 1, numagc_inline_word_int(COINS[i][1]));
        numagc_inline_init(cell, 0, pair);
        numagc_inline_init(cell, 1, sp[0]);
        sp[0] = cell;
    }
    uint64_t list = sp[0];
    numagc_regs_store(m, hp, sp);
    return pay_n_par(m, j->depth, j->val, list, &j->ways);
}

/* The independent answer: a dynamic program over the coins. */
static int64_t ways_dp(int64_t val) {
    int64_t *ways = calloc((size_t)val + 1, sizeof(int64_t));
    int64_t *next = calloc((size_t)val + 1, sizeof(int64_t));
    if (ways == NULL || next == NULL) {
        free(ways);
        free(next);
        return -1;
    }
    ways[0] = 1;
    for (int k = 0; k < 6; k++) {
        int64_t c = COINS[k][0], q = COINS[k][1];
        for (int64_t v = 0; v <= val; v++) {
            int64_t sum = 0;
            for (int64_t t = 0; t <= q && t * c <= v; t++) sum += ways[v - t * c];
            next[v] = sum;
        }
        int64_t *swap = ways;
        ways = next;
        next = swap;
    }
    int64_t w = ways[val];
    free(ways);
    free(next);
    return w;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: coins VALUE DEPTH [VPROCS]\n");
        return 2;
    }
    long long val, depth;
    if (bench_int_arg("coins", "VALUE", argv[1], 0, 5000, &val) ||
        bench_int_arg("coins", "DEPTH", argv[2], 0, 30, &depth))
        return 2;
    static const char *const names[2] = {"coin-pair", "coin-cons"};
    static const size_t fields[2] = {2, 2};
    numagc_runtime *rt = NULL;
    if (bench_runtime("coins", argc == 4 ? argv[3] : NULL, names, fields, 2, &rt) != 0) return 1;
    int rc;
    job j = {val, depth, 0};
    if ((rc = numagc_run_on(rt, 0, run, &j)) != NUMAGC_OK) return bench_fail("coins", "coins", rc);
    numagc_runtime_free(rt);
    printf("coins: ways to pay %lld (depth %lld) = %lld\n", val, depth, (long long)j.ways);
    int64_t want = ways_dp(val);
    if (j.ways != want) {
        fprintf(stderr, "coins: %lld ways to pay %lld, expected %lld\n", (long long)j.ways, val,
                (long long)want);
        return 1;
    }
    return 0;
}
