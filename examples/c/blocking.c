/*
 * blocking.c: a callback that blocks in foreign code (here: nanosleep)
 * between numagc_enter_blocking and numagc_leave_blocking does not stall
 * the other vprocs' collections.
 *
 *   cargo build --release -p numagc-capi
 *   cc -std=c11 -Wall -Wextra -Iinclude examples/c/blocking.c \
 *      -Ltarget/release -l:libnumagc.a -lpthread -ldl -lm -o blocking
 *   ./blocking [ms]       (how long vproc 1 blocks; default 1000)
 *
 * Two vprocs, safepoint-timeout 300 ms. Vproc 1 builds a list, then blocks
 * for `ms` milliseconds; vproc 0 runs three global collections meanwhile.
 * 1. Inside a blocking section: every collection completes (vproc 1's proxy
 *    takes part for it), and the list is intact afterwards.
 * 2. The same wait outside a section: the first collection is called off
 *    with NUMAGC_ERR_SAFEPOINT_TIMEOUT after 300 ms, and the next ones wait
 *    for vproc 1 — the stall the section removes.
 * 3. Misuses: using the heap inside a section, entering twice, leaving
 *    without entering.
 * Prints the collections' times, "blocking: all checks passed" and exits
 * 0, or names the first failed check and exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <numagc.h>
#include "check.h"
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LIST_LEN 5000
#define COLLECTIONS 3

static numagc_desc CONS; /* fields: 0 payload (raw), 1 tail (value) */
static int failures = 0;
static long block_ms = 1000;

struct round {
    int in_section;            /* vproc 1 blocks inside a section */
    atomic_int blocked;        /* vproc 1 is about to block */
    int codes[COLLECTIONS];    /* what vproc 0's collections returned */
    double ms[COLLECTIONS];    /* how long each took */
};

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

static int build_list(numagc_scope *s, uint64_t n, numagc_value *out) {
    numagc_frame f;
    numagc_value list;
    TRY(numagc_frame_enter(s, &f));
    TRY(numagc_local(s, NUMAGC_NIL, &list));
    for (uint64_t i = 0; i < n; i++) {
        numagc_frame g;
        numagc_value cell;
        TRY(numagc_frame_enter(s, &g));
        TRY(numagc_alloc_mixed(s, CONS, &list, 1, &i, 1, &cell));
        TRY(numagc_assign(s, list, cell));
        TRY(numagc_frame_leave(s, g));
    }
    return numagc_frame_return(s, f, list, out);
}

static int check_list(numagc_scope *s, numagc_value list, uint64_t n) {
    numagc_frame f;
    TRY(numagc_frame_enter(s, &f));
    numagc_value v = list;
    for (uint64_t i = n; i-- > 0;) {
        uint64_t raw;
        ASSERT(!numagc_is_int(v));
        TRY(numagc_raw(s, v, 0, &raw));
        ASSERT(raw == i);
        TRY(numagc_field(s, v, 1, &v));
    }
    ASSERT(numagc_is_int(v));
    return numagc_frame_leave(s, f);
}

static int blocked_vproc(numagc_scope *s, struct round *r) {
    numagc_value list, v;
    TRY(build_list(s, LIST_LEN, &list));
    if (r->in_section) {
        TRY(numagc_enter_blocking(s));
        /* Misuses inside the section: refused, nothing changes. */
        numagc_value one = numagc_int(1);
        EXPECT(numagc_alloc_vector(s, &one, 1, &v), NUMAGC_ERR_MISUSE);
        EXPECT(numagc_enter_blocking(s), NUMAGC_ERR_MISUSE);
        atomic_store(&r->blocked, 1);
        sleep_ms(block_ms); /* foreign code that blocks */
        TRY(numagc_leave_blocking(s));
        EXPECT(numagc_leave_blocking(s), NUMAGC_ERR_MISUSE);
    } else {
        atomic_store(&r->blocked, 1);
        sleep_ms(block_ms);
    }
    return check_list(s, list, LIST_LEN);
}

static int collecting_vproc(numagc_scope *s, struct round *r) {
    while (!atomic_load(&r->blocked)) sleep_ms(1);
    for (int i = 0; i < COLLECTIONS; i++) {
        numagc_frame f;
        numagc_value garbage;
        TRY(numagc_frame_enter(s, &f));
        TRY(build_list(s, 1000, &garbage));
        double t0 = now_ms();
        r->codes[i] = numagc_collect_global(s);
        r->ms[i] = now_ms() - t0;
        TRY(numagc_frame_leave(s, f));
    }
    return NUMAGC_OK;
}

static int body(numagc_scope *s, void *data) {
    size_t vproc;
    TRY(numagc_scope_vproc(s, &vproc));
    return vproc == 1 ? blocked_vproc(s, data) : collecting_vproc(s, data);
}

int main(int argc, char **argv) {
    if (argc > 1) block_ms = atol(argv[1]);
    if (block_ms < 400) block_ms = 400; /* longer than the timeout */
    numagc_config *cfg = example_config();
    CHECK(numagc_config_set(cfg, "vprocs", "2"));
    CHECK(numagc_config_set(cfg, "safepoint-timeout", "300ms"));
    CHECK(numagc_config_set(cfg, "local-heap", "256K"));
    CHECK(numagc_config_set(cfg, "pin", "false"));
    numagc_runtime *rt;
    CHECK(numagc_runtime_new(cfg, &rt));
    CHECK(numagc_config_free(cfg));
    size_t offsets[] = {1};
    CHECK(numagc_register_mixed(rt, "cons", 2, offsets, 1, 0, &CONS));

    for (int in_section = 1; in_section >= 0; in_section--) {
        struct round r = {.in_section = in_section};
        atomic_init(&r.blocked, 0);
        CHECK(numagc_run_each(rt, body, &r));
        printf("%s a blocking section, vproc 1 blocked %ld ms:", in_section ? "inside" : "outside",
               block_ms);
        for (int i = 0; i < COLLECTIONS; i++) {
            printf(" %s %.1f ms%s", numagc_status_name(r.codes[i]), r.ms[i],
                   i + 1 < COLLECTIONS ? "," : "\n");
            /* Outside a section the first collection is called off; the
             * later ones wait for vproc 1 to come back (or are called off
             * too), depending on how long it blocks. */
            int want = in_section ? NUMAGC_OK : NUMAGC_ERR_SAFEPOINT_TIMEOUT;
            if (r.codes[i] != want && (in_section || i == 0)) {
                fprintf(stderr, "collection %d returned %s, expected %s\n", i,
                        numagc_status_name(r.codes[i]), numagc_status_name(want));
                failures++;
            }
        }
    }
    CHECK(numagc_runtime_free(rt));
    if (failures) {
        fprintf(stderr, "blocking: %d check(s) failed\n", failures);
        return 1;
    }
    printf("blocking: all checks passed\n");
    return 0;
}
