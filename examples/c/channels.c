/*
 * channels.c: parallel tasks, threads and channels through numagc's C
 * interface, and the misuses of them that it detects.
 *
 *   cargo build --release -p numagc-capi
 *   cc -std=c11 -Wall -Wextra -Iinclude examples/c/channels.c \
 *      -Ltarget/release -l:libnumagc.a -lpthread -ldl -lm -o channels
 *   ./channels [n]        (fib(n) with nested par2; default 22)
 *
 * 1. fib(n) with nested numagc_par2 on 2 vprocs, boxed results, checked.
 * 2. A producer thread (continuation-passing: each step sends a list with
 *    numagc_next_send and continues with itself) and a consumer callback
 *    that receives with numagc_recv and checks every list.
 * 3. Two sender threads and a numagc_select over their channels: each
 *    channel's values arrive once and in order.
 * 4. A thread blocked on a channel with a list in its environment while
 *    the callback forces minor, major and global collections; it then
 *    checks its list and answers.
 * 5. Misuses, each with its status code and message.
 * Prints "channels: all checks passed" and exits 0, or names the first
 * failed check and exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <numagc.h>
#include "check.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static numagc_desc CONS; /* fields: 0 payload (raw), 1 tail (value) */
static int FIB_N = 22;
static int failures = 0;

/* ---- helpers ------------------------------------------------------------- */

static int box_int(numagc_scope *s, int64_t i, numagc_value *out) {
    numagc_value v = numagc_int(i);
    return numagc_alloc_vector(s, &v, 1, out);
}

static int unbox_int(numagc_scope *s, numagc_value v, int64_t *out) {
    numagc_value f;
    TRY(numagc_field(s, v, 0, &f));
    return numagc_get_int(f, out);
}

/* A list of `len` cells with payloads 0..len-1; `*out` in the caller's frame. */
static int make_list(numagc_scope *s, uint64_t len, numagc_value *out) {
    numagc_frame f;
    numagc_value list, cell;
    TRY(numagc_frame_enter(s, &f));
    TRY(numagc_local(s, NUMAGC_NIL, &list));
    for (uint64_t i = 0; i < len; i++) {
        numagc_frame g;
        TRY(numagc_frame_enter(s, &g));
        TRY(numagc_alloc_mixed(s, CONS, &list, 1, &i, 1, &cell));
        TRY(numagc_assign(s, list, cell));
        TRY(numagc_frame_leave(s, g));
    }
    return numagc_frame_return(s, f, list, out);
}

/* The sum of the payloads and the length of a list. */
static int list_sum(numagc_scope *s, numagc_value list, uint64_t *sum, uint64_t *len) {
    numagc_frame f;
    TRY(numagc_frame_enter(s, &f));
    *sum = 0;
    *len = 0;
    for (numagc_value v = list; !numagc_is_int(v);) {
        uint64_t x;
        TRY(numagc_raw(s, v, 0, &x));
        *sum += x;
        *len += 1;
        TRY(numagc_field(s, v, 1, &v));
    }
    return numagc_frame_leave(s, f);
}

static int64_t fib_model(int64_t n) {
    int64_t a = 0, b = 1;
    for (int64_t i = 0; i < n; i++) {
        int64_t t = a + b;
        a = b;
        b = t;
    }
    return a;
}

/* ---- 1. fib with nested par2 ---------------------------------------------- */

/* The userdata of fib tasks: read-only, so any vproc thread may use it. */
static const int64_t MINUS_ONE = 1, MINUS_TWO = 2;

static int fib_value(numagc_scope *s, int64_t n, numagc_value *out);

/* A task: fib(env[0] - *userdata), boxed. */
static int fib_task(numagc_scope *s, const numagc_value *env, size_t n, void *userdata, numagc_value *result) {
    int64_t k;
    ASSERT(n == 1);
    TRY(numagc_get_int(env[0], &k));
    return fib_value(s, k - *(const int64_t *)userdata, result);
}

static int fib_value(numagc_scope *s, int64_t n, numagc_value *out) {
    if (n < 12) { /* small: no fork, some garbage */
        numagc_frame f;
        numagc_value g;
        TRY(numagc_frame_enter(s, &f));
        TRY(make_list(s, (uint64_t)n, &g));
        TRY(numagc_frame_leave(s, f));
        return box_int(s, fib_model(n), out);
    }
    numagc_frame f;
    numagc_value env = numagc_int(n), x, y;
    int64_t a, b;
    TRY(numagc_frame_enter(s, &f));
    TRY(numagc_par2(s, &env, 1, fib_task, (void *)&MINUS_ONE, fib_task, (void *)&MINUS_TWO, &x, &y));
    TRY(unbox_int(s, x, &a));
    TRY(unbox_int(s, y, &b));
    TRY(numagc_frame_leave(s, f));
    return box_int(s, a + b, out);
}

static int fib_callback(numagc_scope *s, void *data) {
    numagc_value v;
    int64_t got;
    TRY(fib_value(s, FIB_N, &v));
    TRY(unbox_int(s, v, &got));
    *(int64_t *)data = got;
    return NUMAGC_OK;
}

/* ---- threads: shared state ------------------------------------------------ */

/* Channels and constants the threads read; written before any thread runs
 * and read-only afterwards, so every vproc thread may use them. */
static struct {
    numagc_channel *lists, *a, *b, *wake, *answer;
    int64_t lists_sent, per_channel;
} T;

/* Ends the thread: the continuation of a last send. */
static int exit_k(numagc_scope *s, const numagc_value *env, size_t n, numagc_value received, void *ud, numagc_next *next) {
    (void)s; (void)env; (void)n; (void)received; (void)ud;
    return numagc_next_exit(next);
}

/* ---- 2. a producer thread -------------------------------------------------- */

/* env[0] = i: sends list i (10 + i cells) on T.lists, continues with i + 1. */
static int producer(numagc_scope *s, const numagc_value *env, size_t n, numagc_value received, void *ud, numagc_next *next) {
    int64_t i;
    numagc_value list;
    (void)ud;
    ASSERT(n == 1 && received == NUMAGC_NIL);
    TRY(numagc_get_int(env[0], &i));
    if (i == T.lists_sent) return numagc_next_exit(next);
    TRY(make_list(s, 10 + (uint64_t)i, &list));
    numagc_value k_env = numagc_int(i + 1);
    return numagc_next_send(next, T.lists, list, &k_env, 1, producer, NULL);
}

static int consumer(numagc_scope *s, void *data) {
    numagc_value start = numagc_int(0);
    (void)data;
    TRY(numagc_spawn_on(s, 1, &start, 1, producer, NULL));
    for (int64_t i = 0; i < T.lists_sent; i++) {
        numagc_frame f;
        numagc_value list;
        uint64_t sum, len, want = 10 + (uint64_t)i;
        TRY(numagc_frame_enter(s, &f));
        TRY(numagc_recv(s, T.lists, &list));
        TRY(list_sum(s, list, &sum, &len));
        ASSERT(len == want && sum == want * (want - 1) / 2);
        TRY(numagc_frame_leave(s, f));
    }
    return NUMAGC_OK;
}

/* ---- 3. select over two channels ------------------------------------------ */

/* env = [i, base]: sends boxed base + i on channel `ud`, per_channel times. */
static int sender(numagc_scope *s, const numagc_value *env, size_t n, numagc_value received, void *ud, numagc_next *next) {
    int64_t i, base;
    numagc_value v;
    (void)received;
    ASSERT(n == 2);
    TRY(numagc_get_int(env[0], &i));
    TRY(numagc_get_int(env[1], &base));
    if (i == T.per_channel) return numagc_next_exit(next);
    TRY(box_int(s, base + i, &v));
    numagc_value k_env[2] = {numagc_int(i + 1), env[1]};
    return numagc_next_send(next, (numagc_channel *)ud, v, k_env, 2, sender, ud);
}

static int selector(numagc_scope *s, void *data) {
    int64_t next_expected[2] = {0, 1000};
    numagc_value env_a[2] = {numagc_int(0), numagc_int(0)}, env_b[2] = {numagc_int(0), numagc_int(1000)};
    (void)data;
    TRY(numagc_spawn_on(s, 0, env_a, 2, sender, T.a));
    TRY(numagc_spawn_on(s, 1, env_b, 2, sender, T.b));
    numagc_sel cases[2] = {
        {T.a, NUMAGC_RECV, 0},
        {T.b, NUMAGC_RECV, 0},
    };
    for (int64_t k = 0; k < 2 * T.per_channel; k++) {
        numagc_frame f;
        numagc_value v;
        size_t which;
        int64_t x;
        TRY(numagc_frame_enter(s, &f));
        TRY(numagc_select(s, cases, 2, &which, &v));
        ASSERT(which < 2);
        TRY(unbox_int(s, v, &x));
        ASSERT(x == next_expected[which]); /* each channel in order, once */
        next_expected[which]++;
        TRY(numagc_frame_leave(s, f));
    }
    ASSERT(next_expected[0] == T.per_channel && next_expected[1] == 1000 + T.per_channel);
    return NUMAGC_OK;
}

/* ---- 4. a thread blocked through collections ------------------------------ */

/* After the receive: env[0] is the list built before blocking. */
static int blocked_then(numagc_scope *s, const numagc_value *env, size_t n, numagc_value received, void *ud, numagc_next *next) {
    uint64_t sum, len;
    int64_t r;
    (void)ud;
    ASSERT(n == 1);
    TRY(list_sum(s, env[0], &sum, &len));
    TRY(numagc_get_int(received, &r));
    return numagc_next_send(next, T.answer, numagc_int((int64_t)sum + r), NULL, 0, exit_k, NULL);
}

static int blocked_body(numagc_scope *s, const numagc_value *env, size_t n, numagc_value received, void *ud, numagc_next *next) {
    numagc_value list;
    (void)env; (void)n; (void)received; (void)ud;
    TRY(make_list(s, 500, &list));
    return numagc_next_recv(next, T.wake, &list, 1, blocked_then, NULL);
}

static int spawn_blocked(numagc_scope *s, void *data) {
    (void)data;
    return numagc_spawn(s, NULL, 0, blocked_body, NULL);
}

static int collect_then_wake(numagc_scope *s, void *data) {
    numagc_value answer;
    int64_t got;
    (void)data;
    for (int round = 0; round < 3; round++) {
        numagc_frame f;
        numagc_value garbage;
        TRY(numagc_frame_enter(s, &f));
        TRY(make_list(s, 20000, &garbage));
        TRY(numagc_frame_leave(s, f));
        TRY(numagc_collect_minor(s));
        TRY(numagc_collect_major(s));
        TRY(numagc_collect_global(s));
    }
    TRY(numagc_send(s, T.wake, numagc_int(7)));
    TRY(numagc_recv(s, T.answer, &answer));
    TRY(numagc_get_int(answer, &got));
    ASSERT(got == 500 * 499 / 2 + 7);
    return NUMAGC_OK;
}

/* ---- 5. misuse ------------------------------------------------------------- */

static numagc_channel *OTHER_CHANNEL; /* of another runtime */
static numagc_channel *FREED_CHANNEL;
static numagc_scope *KEPT_SCOPE;
static int NEXT_RESULTS[3]; /* codes a thread body saw, read after it ran */

static int ok_task(numagc_scope *s, const numagc_value *env, size_t n, void *ud, numagc_value *result) {
    (void)s; (void)env; (void)n; (void)ud;
    *result = NUMAGC_NIL;
    return NUMAGC_OK;
}

static int failing_task(numagc_scope *s, const numagc_value *env, size_t n, void *ud, numagc_value *result) {
    numagc_value v;
    (void)env; (void)n; (void)ud; (void)result;
    return numagc_alloc_mixed(s, 4000, NULL, 0, NULL, 0, &v); /* no such descriptor */
}

static int unbalanced_task(numagc_scope *s, const numagc_value *env, size_t n, void *ud, numagc_value *result) {
    numagc_frame f;
    (void)env; (void)n; (void)ud;
    *result = NUMAGC_NIL;
    return numagc_frame_enter(s, &f); /* and never left */
}

static int keeping_task(numagc_scope *s, const numagc_value *env, size_t n, void *ud, numagc_value *result) {
    (void)env; (void)n; (void)ud;
    KEPT_SCOPE = s;
    *result = NUMAGC_NIL;
    return NUMAGC_OK;
}

/* Uses the parent's scope (passed as userdata) instead of its own. */
static int parent_scope_task(numagc_scope *s, const numagc_value *env, size_t n, void *ud, numagc_value *result) {
    numagc_value v;
    (void)s; (void)env; (void)n;
    *result = NUMAGC_NIL;
    return numagc_alloc_vector((numagc_scope *)ud, NULL, 0, &v);
}

static int misuse_body(numagc_scope *s, const numagc_value *env, size_t n, numagc_value received, void *ud, numagc_next *next) {
    numagc_value v;
    (void)env; (void)n; (void)received; (void)ud;
    NEXT_RESULTS[0] = numagc_recv(s, T.wake, &v);             /* blocking, in a thread */
    NEXT_RESULTS[1] = numagc_next_exit(next);
    NEXT_RESULTS[2] = numagc_next_exit(next);                 /* a second next */
    return NUMAGC_OK;
}

static int silent_body(numagc_scope *s, const numagc_value *env, size_t n, numagc_value received, void *ud, numagc_next *next) {
    (void)s; (void)env; (void)n; (void)received; (void)ud; (void)next;
    return NUMAGC_OK; /* says nothing about what comes next */
}

static int misuse(numagc_scope *s, void *data) {
    numagc_value x, y, v;
    size_t idx;
    (void)data;
    EXPECT(numagc_par2(s, NULL, 0, ok_task, NULL, failing_task, NULL, &x, &y), NUMAGC_ERR_UNKNOWN_DESCRIPTOR);
    EXPECT(numagc_par2(s, NULL, 0, unbalanced_task, NULL, ok_task, NULL, &x, &y), NUMAGC_ERR_UNBALANCED_FRAME);
    EXPECT(numagc_par2(s, NULL, 0, parent_scope_task, s, ok_task, NULL, &x, &y), NUMAGC_ERR_NOT_ON_VPROC);
    EXPECT(numagc_par2(s, NULL, 0, NULL, NULL, ok_task, NULL, &x, &y), NUMAGC_ERR_NULL_ARGUMENT);
    TRY(numagc_par2(s, NULL, 0, keeping_task, NULL, ok_task, NULL, &x, &y));
    EXPECT(numagc_poll(KEPT_SCOPE), NUMAGC_ERR_NOT_ON_VPROC);
    EXPECT(numagc_send(s, OTHER_CHANNEL, NUMAGC_NIL), NUMAGC_ERR_MISUSE);
    EXPECT(numagc_send(s, FREED_CHANNEL, NUMAGC_NIL), NUMAGC_ERR_BAD_VALUE);
    EXPECT(numagc_recv(s, T.wake, NULL), NUMAGC_ERR_NULL_ARGUMENT);
    EXPECT(numagc_select(s, NULL, 0, &idx, &v), NUMAGC_ERR_MISUSE);
    EXPECT(numagc_spawn(s, NULL, 0, NULL, NULL), NUMAGC_ERR_NULL_ARGUMENT);
    EXPECT(numagc_spawn_on(s, 99, NULL, 0, exit_k, NULL), NUMAGC_ERR_MISUSE);
    TRY(numagc_spawn(s, NULL, 0, misuse_body, NULL));
    TRY(numagc_spawn(s, NULL, 0, silent_body, NULL));
    return NUMAGC_OK;
}

/* Waits (outside callbacks) until `n` threads have failed, then reads their errors. */
static int wait_thread_errors(numagc_runtime *rt, size_t n, char **all) {
    size_t len = 0, cap = 4096;
    *all = calloc(cap, 1);
    if (!*all) return 1;
    for (int tries = 0; tries < 20000; tries++) {
        char *json;
        CHECK(numagc_take_thread_errors(rt, &json));
        size_t add = strlen(json);
        if (add > 2) { /* not "[]" */
            while (len + add + 1 > cap) {
                char *bigger = realloc(*all, cap *= 2);
                if (!bigger) { numagc_string_free(json); return 1; }
                *all = bigger;
            }
            memcpy(*all + len, json, add + 1);
            len += add;
        }
        numagc_string_free(json);
        size_t seen = 0;
        for (const char *p = *all; (p = strstr(p, "the C thread body")) != NULL; p++) seen++;
        if (seen >= n) return 0;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return 1;
}

int main(int argc, char **argv) {
    if (argc > 1) FIB_N = atoi(argv[1]);
    if (FIB_N < 0 || FIB_N > 40) {
        fprintf(stderr, "usage: channels [n], 0 <= n <= 40\n");
        return 2;
    }
    numagc_config *cfg = example_config();
    CHECK(numagc_config_set(cfg, "vprocs", "2"));
    CHECK(numagc_config_set(cfg, "local-heap", "1M"));
    CHECK(numagc_config_set(cfg, "pin", "false"));
    numagc_runtime *rt, *other;
    CHECK(numagc_runtime_new(cfg, &rt));
    CHECK(numagc_config_set(cfg, "vprocs", "1"));
    CHECK(numagc_runtime_new(cfg, &other));
    CHECK(numagc_config_free(cfg));
    size_t tail[] = {1};
    CHECK(numagc_register_mixed(rt, "cons", 2, tail, 1, false, &CONS));

    /* 1. */
    int64_t fib = 0;
    CHECK(numagc_run_on(rt, 0, fib_callback, &fib));
    if (fib != fib_model(FIB_N)) {
        fprintf(stderr, "fib(%d) = %lld, expected %lld\n", FIB_N, (long long)fib, (long long)fib_model(FIB_N));
        return 1;
    }
    printf("fib(%d) = %lld with nested par2\n", FIB_N, (long long)fib);

    /* 2.-4. */
    CHECK(numagc_channel_new(rt, &T.lists));
    CHECK(numagc_channel_new(rt, &T.a));
    CHECK(numagc_channel_new(rt, &T.b));
    CHECK(numagc_channel_new(rt, &T.wake));
    CHECK(numagc_channel_new(rt, &T.answer));
    T.lists_sent = 100;
    T.per_channel = 100;
    CHECK(numagc_run_on(rt, 0, consumer, NULL));
    printf("consumer received %lld lists from a producer thread\n", (long long)T.lists_sent);
    CHECK(numagc_run_on(rt, 0, selector, NULL));
    printf("select took %lld values from each of two channels, in order\n", (long long)T.per_channel);
    CHECK(numagc_run_on(rt, 1, spawn_blocked, NULL));
    for (size_t waiting = 0; waiting == 0;) {
        CHECK(numagc_channel_waiting(T.wake, &waiting));
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    CHECK(numagc_run_on(rt, 0, collect_then_wake, NULL));
    printf("a blocked thread kept its list through 9 forced collections\n");

    /* 5. */
    CHECK(numagc_channel_new(other, &OTHER_CHANNEL));
    CHECK(numagc_channel_new(rt, &FREED_CHANNEL));
    CHECK(numagc_channel_free(FREED_CHANNEL));
    EXPECT(numagc_channel_free(FREED_CHANNEL), NUMAGC_ERR_BAD_VALUE);
    numagc_channel *none;
    EXPECT(numagc_channel_new(NULL, &none), NUMAGC_ERR_NULL_ARGUMENT);
    CHECK(numagc_run_on(rt, 0, misuse, NULL));
    char *errors;
    if (wait_thread_errors(rt, 2, &errors)) {
        fprintf(stderr, "the two failing threads did not fail\n");
        return 1;
    }
    if (NEXT_RESULTS[0] != NUMAGC_ERR_MISUSE || NEXT_RESULTS[1] != NUMAGC_OK || NEXT_RESULTS[2] != NUMAGC_ERR_MISUSE) {
        fprintf(stderr, "thread body saw %d %d %d\n", NEXT_RESULTS[0], NEXT_RESULTS[1], NEXT_RESULTS[2]);
        failures++;
    }
    if (!strstr(errors, "numagc_next_* was called twice") || !strstr(errors, "without saying what comes next")) {
        fprintf(stderr, "unexpected thread errors: %s\n", errors);
        failures++;
    }
    printf("thread errors: %s\n", errors);
    free(errors);

    char *stats;
    CHECK(numagc_stats_json(rt, &stats));
    if (!strstr(stats, "\"threads_failed\":")) failures++;
    numagc_string_free(stats);

    numagc_channel *chans[] = {T.lists, T.a, T.b, T.wake, T.answer, OTHER_CHANNEL};
    for (size_t i = 0; i < sizeof chans / sizeof chans[0]; i++) CHECK(numagc_channel_free(chans[i]));
    CHECK(numagc_runtime_free(other));
    CHECK(numagc_runtime_free(rt));
    if (failures) {
        fprintf(stderr, "channels: %d check(s) failed\n", failures);
        return 1;
    }
    printf("channels: all checks passed\n");
    return 0;
}
