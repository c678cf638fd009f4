/*
 * bad_input.c: values that C code can write but numagc must not trust,
 * through the real C interface (issue 16). Each is refused with its status
 * code before anything is read or sized by it, the process goes on, and
 * the runtime keeps working afterwards.
 *
 *   cargo build --release -p numagc-capi
 *   cc -std=c11 -Wall -Wextra -Iinclude examples/c/bad_input.c \
 *      -Ltarget/release -l:libnumagc.a -lpthread -ldl -lm -o bad_input
 *   ./bad_input
 *
 * 1. `dir` fields that are no numagc_dir (7, -1) in numagc_select and
 *    numagc_next_select: NUMAGC_ERR_INVALID_ARGUMENT.
 * 2. An `is_mutable` flag of 2: NUMAGC_ERR_INVALID_ARGUMENT; more pointer
 *    offsets than fields: NUMAGC_ERR_INVALID_DESCRIPTOR.
 * 3. Counts of 2^40 and SIZE_MAX with arrays of one element:
 *    numagc_alloc_mixed (NUMAGC_ERR_MISUSE: not the descriptor's counts),
 *    numagc_alloc_vector (NUMAGC_ERR_HEAP_LIMIT: larger than the heap;
 *    NUMAGC_ERR_INVALID_ARGUMENT: past the 48-bit length field),
 *    numagc_par2, numagc_spawn, numagc_select, numagc_next_select
 *    (NUMAGC_ERR_INVALID_ARGUMENT: over NUMAGC_MAX_ENV / NUMAGC_MAX_CASES).
 * 4. numagc_fork (the fork of compiled code on words): the counts of 3.,
 *    an environment word that is no value, a record that is not the
 *    vproc's (NUMAGC_ERR_BAD_VALUE, _MISUSE: nothing runs), and tasks that
 *    leave a frame pushed, answer a word that is no value or use the
 *    scope (NUMAGC_ERR_UNBALANCED_FRAME, _BAD_VALUE, _MISUSE), the record
 *    as it was afterwards.
 * 5. Good calls afterwards: a vector, a par2, a fork on words, a thread
 *    that sends and a select that receives.
 * Prints "bad_input: all checks passed" and exits 0, or names the first
 * failed check and exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <numagc.h>
#include <numagc_inline.h>
#include "check.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures = 0;
static numagc_desc CONS; /* fields: 0 payload (raw), 1 tail (value) */
static numagc_channel *CH;

static const size_t HUGE[] = {(size_t)1 << 40, SIZE_MAX};
static const int BAD_DIRS[] = {7, -1};

/* What the thread body saw: its numagc_next_select results, in order. */
static int NEXT_RESULTS[6];
static volatile int NEXT_DONE = 0;

static int exit_k(numagc_scope *s, const numagc_value *env, size_t n, numagc_value received, void *ud, numagc_next *next) {
    (void)s, (void)env, (void)n, (void)received, (void)ud;
    return numagc_next_exit(next);
}

/* A thread that first tries bad choices, then sends 42 on CH and ends. */
static int thread_body(numagc_scope *s, const numagc_value *env, size_t n, numagc_value received, void *ud, numagc_next *next) {
    (void)s, (void)env, (void)n, (void)received, (void)ud;
    numagc_case c = {CH, NUMAGC_RECV, 0, exit_k, NULL};
    int k = 0;
    for (size_t i = 0; i < 2; i++) {
        c.dir = BAD_DIRS[i];
        NEXT_RESULTS[k++] = numagc_next_select(next, NULL, 0, &c, 1);
    }
    c.dir = NUMAGC_RECV;
    for (size_t i = 0; i < 2; i++) {
        NEXT_RESULTS[k++] = numagc_next_select(next, NULL, 0, &c, HUGE[i]);
        NEXT_RESULTS[k++] = numagc_next_select(next, &received, HUGE[i], &c, 1);
    }
    __atomic_store_n(&NEXT_DONE, 1, __ATOMIC_SEQ_CST);
    /* Nothing was recorded by the refused calls: say what comes next now. */
    return numagc_next_send(next, CH, numagc_int(42), NULL, 0, exit_k, NULL);
}

static int task(numagc_scope *s, const numagc_value *env, size_t n, void *ud, numagc_value *result) {
    (void)s, (void)env, (void)ud;
    *result = numagc_int((int64_t)n);
    return NUMAGC_OK;
}

/* What a numagc_fork task does wrong (its userdata); 0: nothing. */
enum { FINE, LEAVES_A_FRAME, BAD_RESULT, USES_THE_SCOPE };
static numagc_scope *OUTER; /* the callback's scope, for USES_THE_SCOPE */

static int word_task(numagc_mutator *m, const uint64_t *env, size_t n, void *ud, uint64_t *result) {
    (void)env;
    *result = numagc_inline_word_int((int64_t)n);
    switch (*(const int *)ud) {
    case LEAVES_A_FRAME:
        numagc_inline_frame_push(m, 1);
        return NUMAGC_OK;
    case BAD_RESULT:
        *result = 0x18; /* an even word that is no object */
        return NUMAGC_OK;
    case USES_THE_SCOPE: {
        size_t v;
        return numagc_scope_vproc(OUTER, &v);
    }
    default:
        return NUMAGC_OK;
    }
}

static int callback(numagc_scope *s, void *ud) {
    (void)ud;
    numagc_value one = NUMAGC_NIL, out = 9, a = 9, b = 9;
    uint64_t word = 5;
    size_t index = 9;

    /* 1. */
    for (size_t i = 0; i < 2; i++) {
        numagc_sel sel = {CH, BAD_DIRS[i], NUMAGC_NIL};
        EXPECT(numagc_select(s, &sel, 1, &index, &out), NUMAGC_ERR_INVALID_ARGUMENT);
        ASSERT(out == 0);
    }
    size_t waiting = 9;
    TRY(numagc_channel_waiting(CH, &waiting));
    ASSERT(waiting == 0);

    /* 3. */
    numagc_sel recv = {CH, NUMAGC_RECV, 0};
    for (size_t i = 0; i < 2; i++) {
        size_t n = HUGE[i];
        EXPECT(numagc_alloc_mixed(s, CONS, &one, n, &word, 1, &out), NUMAGC_ERR_MISUSE);
        EXPECT(numagc_alloc_mixed(s, CONS, &one, 1, &word, n, &out), NUMAGC_ERR_MISUSE);
        if (i == 0)
            EXPECT(numagc_alloc_vector(s, &one, n, &out), NUMAGC_ERR_HEAP_LIMIT);
        else
            EXPECT(numagc_alloc_vector(s, &one, n, &out), NUMAGC_ERR_INVALID_ARGUMENT);
        ASSERT(out == 0);
        EXPECT(numagc_par2(s, &one, n, task, NULL, task, NULL, &a, &b), NUMAGC_ERR_INVALID_ARGUMENT);
        ASSERT(a == 0 && b == 0);
        EXPECT(numagc_spawn(s, &one, n, thread_body, NULL), NUMAGC_ERR_INVALID_ARGUMENT);
        EXPECT(numagc_select(s, &recv, n, &index, &out), NUMAGC_ERR_INVALID_ARGUMENT);
    }

    /* 4. */
    static const int fine = FINE, frame = LEAVES_A_FRAME, result = BAD_RESULT, scope = USES_THE_SCOPE;
    numagc_mutator *m;
    TRY(numagc_mutator_get(s, &m));
    uint64_t *top = m->roots_top, wa = 9, wb = 9, env[] = {numagc_inline_word_int(1), 0x18};
    void *fd = (void *)&fine;
    for (size_t i = 0; i < 2; i++)
        EXPECT(numagc_fork(m, env, HUGE[i], word_task, fd, word_task, fd, &wa, &wb), NUMAGC_ERR_INVALID_ARGUMENT);
    EXPECT(numagc_fork(m, env, 2, word_task, fd, word_task, fd, &wa, &wb), NUMAGC_ERR_BAD_VALUE);
    EXPECT(numagc_fork(m + 1, env, 1, word_task, fd, word_task, fd, &wa, &wb), NUMAGC_ERR_MISUSE);
    EXPECT(numagc_fork(m, env, 1, NULL, fd, word_task, fd, &wa, &wb), NUMAGC_ERR_NULL_ARGUMENT);
    OUTER = s;
    void *fr = (void *)&frame, *re = (void *)&result, *sc = (void *)&scope;
    EXPECT(numagc_fork(m, env, 1, word_task, fr, word_task, fd, &wa, &wb), NUMAGC_ERR_UNBALANCED_FRAME);
    EXPECT(numagc_fork(m, env, 1, word_task, fd, word_task, fr, &wa, &wb), NUMAGC_ERR_UNBALANCED_FRAME);
    EXPECT(numagc_fork(m, env, 1, word_task, re, word_task, fd, &wa, &wb), NUMAGC_ERR_BAD_VALUE);
    EXPECT(numagc_fork(m, env, 1, word_task, fd, word_task, re, &wa, &wb), NUMAGC_ERR_BAD_VALUE);
    EXPECT(numagc_fork(m, env, 1, word_task, sc, word_task, fd, &wa, &wb), NUMAGC_ERR_MISUSE);
    EXPECT(numagc_fork(m, env, 1, word_task, fd, word_task, sc, &wa, &wb), NUMAGC_ERR_MISUSE);
    ASSERT(wa == 0 && wb == 0);
    ASSERT(m->roots_top == top);

    /* 5. */
    TRY(numagc_fork(m, env, 1, word_task, fd, word_task, fd, &wa, &wb));
    ASSERT(wa == numagc_inline_word_int(1) && wb == numagc_inline_word_int(1));
    numagc_frame f;
    TRY(numagc_frame_enter(s, &f));
    numagc_value three[] = {numagc_int(1), numagc_int(2), numagc_int(3)}, v, x;
    TRY(numagc_alloc_vector(s, three, 3, &v));
    TRY(numagc_field(s, v, 2, &x));
    ASSERT(x == numagc_int(3));
    TRY(numagc_alloc_mixed(s, CONS, &one, 1, &word, 1, &v));
    TRY(numagc_par2(s, three, 3, task, NULL, task, NULL, &a, &b));
    ASSERT(a == numagc_int(3) && b == numagc_int(3));
    TRY(numagc_spawn(s, NULL, 0, thread_body, NULL));
    TRY(numagc_select(s, &recv, 1, &index, &x));
    ASSERT(index == 0 && x == numagc_int(42));
    TRY(numagc_frame_leave(s, f));
    return NUMAGC_OK;
}

int main(void) {
    numagc_config *cfg = example_config();
    CHECK(numagc_config_set(cfg, "vprocs", "1"));
    CHECK(numagc_config_set(cfg, "local-heap", "256K"));
    CHECK(numagc_config_set(cfg, "max-heap", "64M"));
    CHECK(numagc_config_set(cfg, "pin", "false"));
    numagc_runtime *rt;
    CHECK(numagc_runtime_new(cfg, &rt));
    CHECK(numagc_config_free(cfg));

    /* 2. */
    size_t offsets[] = {1, 0};
    numagc_desc d = 77;
    EXPECT(numagc_register_mixed(rt, "cons", 2, offsets, 1, 2, &d), NUMAGC_ERR_INVALID_ARGUMENT);
    EXPECT(numagc_register_mixed(rt, "cons", 2, offsets, SIZE_MAX, false, &d), NUMAGC_ERR_INVALID_DESCRIPTOR);
    if (d != 0) {
        fprintf(stderr, "a refused descriptor left its output set\n");
        failures++;
    }
    CHECK(numagc_register_mixed(rt, "cons", 2, offsets, 1, false, &CONS));
    CHECK(numagc_channel_new(rt, &CH));

    CHECK(numagc_run_on(rt, 0, callback, NULL));
    while (!__atomic_load_n(&NEXT_DONE, __ATOMIC_SEQ_CST)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    for (int k = 0; k < 6; k++) {
        if (NEXT_RESULTS[k] != NUMAGC_ERR_INVALID_ARGUMENT) {
            fprintf(stderr, "numagc_next_select #%d returned %s\n", k, numagc_status_name(NEXT_RESULTS[k]));
            failures++;
        }
    }
    printf("a thread's bad choices were refused and it went on\n");
    char *errors;
    CHECK(numagc_take_thread_errors(rt, &errors));
    if (strcmp(errors, "[]") != 0) {
        fprintf(stderr, "unexpected thread errors: %s\n", errors);
        failures++;
    }
    CHECK(numagc_string_free(errors));

    CHECK(numagc_channel_free(CH));
    CHECK(numagc_runtime_free(rt));
    if (failures) {
        fprintf(stderr, "bad_input: %d check(s) failed\n", failures);
        return 1;
    }
    printf("bad_input: all checks passed\n");
    return 0;
}
