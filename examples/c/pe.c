/*
 * pe.c: PE groups through the C interface (issue 19): runtime instances of
 * their own heaps in one process, sharing nothing but messages.
 *
 *   - parfib with its second call forked by numagc_par2_export: an idle
 *     PE may take it, its argument and result travelling packed;
 *   - numagc_call_on: a task sent to PE 1 that makes a mutable array
 *     there, which comes back to PE 0 as a FetchMe, read and written with
 *     numagc_remote_get / numagc_remote_set at its owner;
 *   - a task sent to PE 1 that bumps PE 0's own array through the global
 *     address it got, and returns it: PE 0 gets its own array back;
 *   - an exported function that fails, and an unknown export id;
 *   - at the end, numagc_pe_group_settle: every global address's weight
 *     came back.
 *
 *   cargo build --release -p numagc-capi
 *   cc -std=c11 -Wall -Wextra -Iinclude examples/c/pe.c \
 *      -Ltarget/release -l:libnumagc.a -lpthread -ldl -lm -o pe
 *   ./pe [N]        (parfib N, default 24; NUMAGC_PLAN=shared applies)
 *
 * Prints "pe: all checks passed" and exits 0 when every answer is right.
 */
#include "check.h"
#include <stdint.h>
#include <string.h>

static int failures;
static uint32_t PFIB, MAKE_ARRAY, BUMP, FAIL;

static int64_t fib(int64_t n) {
    int64_t a = 0, b = 1;
    for (int64_t i = 0; i < n; i++) {
        int64_t t = a + b;
        a = b;
        b = t;
    }
    return a;
}

static int pfib(numagc_scope *s, int64_t n, int64_t *out);

/* The local half of a fork: pfib(n - 1), its environment the exported
 * half's argument, n - 2. */
static int pfib_left(numagc_scope *s, const numagc_value *env, size_t n, void *data,
                     numagc_value *result) {
    (void)n;
    (void)data;
    int64_t k, r;
    TRY(numagc_get_int(env[0], &k));
    TRY(pfib(s, k + 1, &r));
    *result = numagc_int(r);
    return NUMAGC_OK;
}

/* The exported task: pfib(args[0]). */
static int pfib_task(numagc_scope *s, const numagc_value *args, size_t n, void *data,
                     numagc_value *result) {
    (void)n;
    (void)data;
    int64_t k, r;
    TRY(numagc_get_int(args[0], &k));
    TRY(pfib(s, k, &r));
    *result = numagc_int(r);
    return NUMAGC_OK;
}

static int pfib(numagc_scope *s, int64_t n, int64_t *out) {
    if (n < 2) {
        *out = n;
        return NUMAGC_OK;
    }
    if (n <= 14) {
        int64_t a, b;
        TRY(pfib(s, n - 1, &a));
        TRY(pfib(s, n - 2, &b));
        *out = a + b;
        return NUMAGC_OK;
    }
    /* pfib(n - 1) here, pfib(n - 2) offered to the other PEs. */
    numagc_value args[1] = {numagc_int(n - 2)};
    numagc_value a, b;
    TRY(numagc_par2_export(s, PFIB, args, 1, pfib_left, NULL, &a, &b));
    int64_t x, y;
    TRY(numagc_get_int(a, &x));
    TRY(numagc_get_int(b, &y));
    *out = x + y;
    return NUMAGC_OK;
}

/* make_array(len, x): a mutable array of len fields holding x, on the PE
 * that runs it. */
static int make_array(numagc_scope *s, const numagc_value *args, size_t n, void *data,
                      numagc_value *result) {
    (void)n;
    (void)data;
    int64_t len;
    TRY(numagc_get_int(args[0], &len));
    numagc_frame f;
    TRY(numagc_frame_enter(s, &f));
    numagc_value arr;
    TRY(numagc_alloc_array(s, (size_t)len, args[1], &arr));
    return numagc_frame_return(s, f, arr, result);
}

/* bump(arr, k): adds k to every field of arr, wherever it lives; returns
 * arr. */
static int bump(numagc_scope *s, const numagc_value *args, size_t n, void *data,
                numagc_value *result) {
    (void)n;
    (void)data;
    int64_t k;
    TRY(numagc_get_int(args[1], &k));
    int remote;
    size_t len;
    TRY(numagc_remote_info(s, args[0], &remote, &len));
    for (size_t i = 0; i < len; i++) {
        numagc_frame f;
        TRY(numagc_frame_enter(s, &f));
        numagc_value x;
        int64_t v;
        TRY(numagc_remote_get(s, args[0], i, &x));
        TRY(numagc_get_int(x, &v));
        TRY(numagc_remote_set(s, args[0], i, numagc_int(v + k)));
        TRY(numagc_frame_leave(s, f));
    }
    *result = args[0];
    return NUMAGC_OK;
}

/* fail(): an exported function that fails. */
static int fail(numagc_scope *s, const numagc_value *args, size_t n, void *data,
                numagc_value *result) {
    (void)s;
    (void)args;
    (void)n;
    (void)data;
    (void)result;
    return NUMAGC_ERR_MISUSE;
}

struct run {
    int64_t n, got;
};

static int program(numagc_scope *s, void *data) {
    struct run *r = data;
    TRY(pfib(s, r->n, &r->got));

    /* An array made on PE 1: a FetchMe here. */
    numagc_value args[2] = {numagc_int(3), numagc_int(7)};
    numagc_value far;
    TRY(numagc_call_on(s, 1, MAKE_ARRAY, args, 2, &far));
    int remote;
    size_t len;
    TRY(numagc_remote_info(s, far, &remote, &len));
    ASSERT(remote == 1 && len == 3);
    numagc_value x;
    int64_t v;
    TRY(numagc_remote_get(s, far, 2, &x));
    TRY(numagc_get_int(x, &v));
    ASSERT(v == 7);
    TRY(numagc_remote_set(s, far, 2, numagc_int(40)));
    TRY(numagc_remote_get(s, far, 2, &x));
    TRY(numagc_get_int(x, &v));
    ASSERT(v == 40);
    EXPECT(numagc_remote_get(s, far, 3, &x), NUMAGC_ERR_MISUSE);

    /* PE 0's own array, bumped on PE 1 through its global address. */
    numagc_value mine, back;
    TRY(numagc_alloc_array(s, 4, numagc_int(1), &mine));
    numagc_value bump_args[2] = {mine, numagc_int(10)};
    TRY(numagc_call_on(s, 1, BUMP, bump_args, 2, &back));
    TRY(numagc_remote_info(s, back, &remote, &len));
    ASSERT(remote == 0 && len == 4);
    for (size_t i = 0; i < 4; i++) {
        TRY(numagc_field(s, mine, i, &x));
        TRY(numagc_get_int(x, &v));
        ASSERT(v == 11);
    }

    /* Failures: the function's, an unknown id, a PE outside the group. */
    EXPECT(numagc_call_on(s, 1, FAIL, NULL, 0, &x), NUMAGC_ERR_PE);
    EXPECT(numagc_call_on(s, 1, 99, NULL, 0, &x), NUMAGC_ERR_INVALID_ARGUMENT);
    EXPECT(numagc_call_on(s, 7, PFIB, args, 1, &x), NUMAGC_ERR_MISUSE);
    return NUMAGC_OK;
}

int main(int argc, char **argv) {
    int64_t n = argc > 1 ? atoll(argv[1]) : 24;
    numagc_exports *ex;
    CHECK(numagc_exports_new(&ex));
    CHECK(numagc_exports_register(ex, "pfib", pfib_task, NULL, &PFIB));
    CHECK(numagc_exports_register(ex, "make_array", make_array, NULL, &MAKE_ARRAY));
    CHECK(numagc_exports_register(ex, "bump", bump, NULL, &BUMP));
    CHECK(numagc_exports_register(ex, "fail", fail, NULL, &FAIL));
    uint32_t dup;
    EXPECT(numagc_exports_register(ex, "bump", bump, NULL, &dup), NUMAGC_ERR_MISUSE);

    numagc_config *cfg = example_config();
    CHECK(numagc_config_set(cfg, "vprocs", "1"));
    numagc_pe_group *g = NULL;
    numagc_exports *ex2;
    CHECK(numagc_exports_new(&ex2));
    EXPECT(numagc_pe_group_new(0, cfg, ex2, &g), NUMAGC_ERR_INVALID_CONFIG);
    CHECK(numagc_pe_group_new(2, cfg, ex, &g));
    CHECK(numagc_config_free(cfg));

    struct run r = {n, 0};
    CHECK(numagc_pe_group_run(g, program, &r));
    if (r.got != fib(n)) {
        fprintf(stderr, "pfib %lld = %lld, expected %lld\n", (long long)n, (long long)r.got,
                (long long)fib(n));
        failures++;
    }
    printf("pfib %lld on 2 PEs = %lld\n", (long long)n, (long long)r.got);
    size_t git, imports;
    CHECK(numagc_pe_group_settle(g, &git, &imports));
    if (git != 0 || imports != 0) {
        fprintf(stderr, "weight books not settled: %zu GIT entries, %zu imports\n", git, imports);
        failures++;
    }
    CHECK(numagc_pe_group_free(g));
    if (failures) {
        fprintf(stderr, "pe: %d check(s) failed\n", failures);
        return 1;
    }
    printf("pe: all checks passed\n");
    return 0;
}
