/*
 * trees.c: binary trees through numagc's C interface, and every misuse
 * the interface detects.
 *
 *   cargo build --release -p numagc-capi
 *   cc -std=c11 -Wall -Wextra -Iinclude examples/c/trees.c \
 *      -Ltarget/release -l:libnumagc.a -lpthread -ldl -lm -o trees
 *   ./trees [depth]        (default 14)
 *
 * Each vproc builds binary trees in root frames, forces minor, major and
 * global collections while the trees are live, and checks every node
 * count against 2^(depth+1) - 1. A long-lived tree is kept in a global
 * root across callbacks, results go through a mutable array, and the
 * statistics are read as JSON. Then each misuse case is provoked and its
 * status code checked. Prints "trees: all checks passed" and exits 0, or
 * names the first failed check and exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <numagc.h>
#include "check.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static numagc_desc NODE; /* fields: 0 left (value), 1 right (value), 2 depth (raw) */
static int DEPTH = 14;
static int failures = 0;

static uint64_t expected_nodes(int depth) { return (UINT64_C(1) << (depth + 1)) - 1; }

/* A tree of the given depth; `*out` is a handle in the caller's frame. */
static int make_tree(numagc_scope *s, int depth, numagc_value *out) {
    numagc_frame f;
    TRY(numagc_frame_enter(s, &f));
    numagc_value kids[2] = {NUMAGC_NIL, NUMAGC_NIL};
    if (depth > 0) {
        TRY(make_tree(s, depth - 1, &kids[0]));
        TRY(make_tree(s, depth - 1, &kids[1]));
    }
    uint64_t raw = (uint64_t)depth;
    numagc_value node;
    TRY(numagc_alloc_mixed(s, NODE, kids, 2, &raw, 1, &node));
    /* Drops the children's handles, keeps the node's. */
    return numagc_frame_return(s, f, node, out);
}

/* Counts the nodes of a tree and checks each node's depth field. */
static int count_nodes(numagc_scope *s, numagc_value t, int depth, uint64_t *n) {
    if (numagc_is_int(t)) return NUMAGC_OK;
    numagc_frame f;
    TRY(numagc_frame_enter(s, &f));
    numagc_kind kind;
    numagc_desc desc;
    uint64_t d;
    TRY(numagc_kind_of(s, t, &kind, &desc));
    ASSERT(kind == NUMAGC_KIND_MIXED && desc == NODE);
    TRY(numagc_raw(s, t, 2, &d));
    ASSERT(d == (uint64_t)depth);
    numagc_value l, r;
    TRY(numagc_field(s, t, 0, &l));
    TRY(numagc_field(s, t, 1, &r));
    *n += 1;
    TRY(count_nodes(s, l, depth - 1, n));
    TRY(count_nodes(s, r, depth - 1, n));
    return numagc_frame_leave(s, f);
}

/* ---- the trees ---------------------------------------------------------- */

struct job {
    numagc_global long_lived; /* a tree of depth DEPTH */
    numagc_global results;    /* a mutable array: nodes checked per vproc */
};

static int make_long_lived(numagc_scope *s, void *data) {
    struct job *job = data;
    size_t vprocs;
    numagc_value tree, results;
    TRY(numagc_scope_vprocs(s, &vprocs));
    TRY(make_tree(s, DEPTH, &tree));
    TRY(numagc_global_new(s, tree, &job->long_lived)); /* promotes the tree */
    TRY(numagc_alloc_array(s, vprocs, numagc_int(0), &results));
    TRY(numagc_global_new(s, results, &job->results));
    return NUMAGC_OK;
}

/* On every vproc: short-lived trees of growing depth, collections while
   they are live, every count checked. */
static int work(numagc_scope *s, void *data) {
    struct job *job = data;
    size_t vproc;
    uint64_t checked = 0;
    TRY(numagc_scope_vproc(s, &vproc));
    for (int depth = 4; depth <= DEPTH; depth += 2) {
        numagc_frame f;
        TRY(numagc_frame_enter(s, &f));
        numagc_value a, b;
        TRY(make_tree(s, depth, &a));
        TRY(numagc_collect_minor(s)); /* `a` moves; its handle follows */
        TRY(make_tree(s, depth, &b));
        TRY(numagc_collect_major(s));
        if (depth == DEPTH) TRY(numagc_collect_global(s)); /* every vproc joins */
        uint64_t na = 0, nb = 0;
        TRY(count_nodes(s, a, depth, &na));
        TRY(count_nodes(s, b, depth, &nb));
        if (na != expected_nodes(depth) || nb != expected_nodes(depth)) {
            fprintf(stderr, "vproc %zu depth %d: %llu and %llu nodes, expected %llu\n", vproc, depth,
                    (unsigned long long)na, (unsigned long long)nb,
                    (unsigned long long)expected_nodes(depth));
            return NUMAGC_ERR_MISUSE;
        }
        checked += na + nb;
        TRY(numagc_frame_leave(s, f));
    }
    /* Publish the count through the shared mutable array. */
    numagc_value results;
    TRY(numagc_global_get(s, job->results, &results));
    TRY(numagc_set(s, results, vproc, numagc_int((int64_t)checked)));
    return NUMAGC_OK;
}

static int check_long_lived(numagc_scope *s, void *data) {
    struct job *job = data;
    numagc_value tree, results, count;
    uint64_t n = 0;
    size_t vprocs;
    TRY(numagc_collect_global(s));
    TRY(numagc_global_get(s, job->long_lived, &tree));
    TRY(count_nodes(s, tree, DEPTH, &n));
    ASSERT(n == expected_nodes(DEPTH));
    /* The counts every vproc stored, copied into an f64 array and a vector. */
    TRY(numagc_scope_vprocs(s, &vprocs));
    TRY(numagc_global_get(s, job->results, &results));
    double counts[64];
    numagc_value items[64];
    ASSERT(vprocs <= 64);
    for (size_t v = 0; v < vprocs; v++) {
        int64_t c;
        TRY(numagc_field(s, results, v, &count));
        TRY(numagc_get_int(count, &c));
        ASSERT(c > 0);
        counts[v] = (double)c;
        items[v] = count;
    }
    numagc_value xs, vec, raw;
    double back[64];
    TRY(numagc_alloc_f64s(s, counts, vprocs, &xs));
    TRY(numagc_alloc_vector(s, items, vprocs, &vec));
    TRY(numagc_collect_minor(s));
    TRY(numagc_read_f64s(s, xs, 0, back, vprocs));
    ASSERT(memcmp(back, counts, vprocs * sizeof(double)) == 0);
    uint64_t words[3] = {1, 2, 3}, w;
    TRY(numagc_alloc_raw(s, words, 3, &raw));
    TRY(numagc_raw(s, raw, 2, &w));
    ASSERT(w == 3);
    TRY(numagc_field(s, vec, vprocs - 1, &count));
    ASSERT(count == items[vprocs - 1]);
    printf("trees: long-lived tree of %llu nodes intact; nodes checked per vproc:",
           (unsigned long long)n);
    for (size_t v = 0; v < vprocs; v++) printf(" %.0f", back[v]);
    printf("\n");
    return NUMAGC_OK;
}

/* ---- misuse ------------------------------------------------------------- */

static numagc_scope *kept_scope; /* a scope kept past its callback */

struct thread_arg {
    numagc_scope *scope;
    int rc;
    char message[512];
};

static void *use_scope_from_another_thread(void *p) {
    struct thread_arg *arg = p;
    numagc_value v;
    arg->rc = numagc_alloc_vector(arg->scope, NULL, 0, &v);
    snprintf(arg->message, sizeof arg->message, "%s", numagc_last_error());
    return NULL;
}

static int misuse_in_callback(numagc_scope *s, void *data) {
    numagc_runtime *rt = data;
    kept_scope = s;
    numagc_value v, a, node;
    numagc_frame outer, inner;

    EXPECT(numagc_frame_enter(s, NULL), NUMAGC_ERR_NULL_ARGUMENT);
    EXPECT(numagc_alloc_vector(s, NULL, 3, &v), NUMAGC_ERR_NULL_ARGUMENT);

    /* Unbalanced frames: leaving an outer frame first changes nothing. */
    TRY(numagc_frame_enter(s, &outer));
    TRY(numagc_alloc_vector_filled(s, 2, numagc_int(7), &a));
    TRY(numagc_frame_enter(s, &inner));
    EXPECT(numagc_frame_leave(s, outer), NUMAGC_ERR_UNBALANCED_FRAME);
    TRY(numagc_frame_leave(s, inner));
    EXPECT(numagc_frame_leave(s, inner), NUMAGC_ERR_UNBALANCED_FRAME);
    TRY(numagc_frame_leave(s, outer));
    /* A handle of a frame that was left. */
    EXPECT(numagc_field(s, a, 0, &v), NUMAGC_ERR_BAD_VALUE);
    ASSERT(v == 0); /* failed calls write 0, never a valid value */

    uint64_t raw = 0;
    numagc_value kids[2] = {NUMAGC_NIL, NUMAGC_NIL};
    EXPECT(numagc_alloc_mixed(s, 9999, kids, 2, &raw, 1, &node), NUMAGC_ERR_UNKNOWN_DESCRIPTOR);
    EXPECT(numagc_alloc_mixed(s, NODE, kids, 1, &raw, 1, &node), NUMAGC_ERR_MISUSE);
    TRY(numagc_alloc_mixed(s, NODE, kids, 2, &raw, 1, &node));
    EXPECT(numagc_set(s, node, 0, node), NUMAGC_ERR_MISUSE); /* immutable */

    /* The scope from a thread that is not this vproc. */
    struct thread_arg arg = {s, -1, ""};
    pthread_t t;
    ASSERT(pthread_create(&t, NULL, use_scope_from_another_thread, &arg) == 0);
    pthread_join(t, NULL);
    if (arg.rc != NUMAGC_ERR_NOT_ON_VPROC) {
        fprintf(stderr, "another thread got %s, expected NUMAGC_ERR_NOT_ON_VPROC\n",
                numagc_status_name(arg.rc));
        failures++;
    } else {
        printf("misuse: %-28s %s\n", "NUMAGC_ERR_NOT_ON_VPROC", arg.message);
    }

    /* A callback cannot wait for another one, nor free its runtime. */
    EXPECT(numagc_run_on(rt, 0, misuse_in_callback, rt), NUMAGC_ERR_MISUSE);
    EXPECT(numagc_runtime_free(rt), NUMAGC_ERR_MISUSE);
    return NUMAGC_OK;
}

static int leave_frame_open(numagc_scope *s, void *data) {
    (void)data;
    numagc_frame f;
    return numagc_frame_enter(s, &f); /* returns 0 with `f` open */
}

struct heap_job {
    numagc_desc node; /* `node` as registered with the small runtime */
    int outcome;
};

static int fill_heap(numagc_scope *s, void *data) {
    struct heap_job *job = data;
    numagc_frame f, g;
    numagc_value list, cell;
    uint64_t cells = 0;
    TRY(numagc_frame_enter(s, &f));
    TRY(numagc_local(s, NUMAGC_NIL, &list)); /* a variable */
    for (;;) {
        TRY(numagc_frame_enter(s, &g));
        numagc_value kids[2] = {list, NUMAGC_NIL};
        int rc = numagc_alloc_mixed(s, job->node, kids, 2, &cells, 1, &cell);
        if (rc == NUMAGC_OK) TRY(numagc_assign(s, list, cell));
        TRY(numagc_frame_leave(s, g));
        if (rc != NUMAGC_OK) {
            job->outcome = rc;
            printf("misuse: %-28s %s (after %llu nodes)\n", numagc_status_name(rc),
                   numagc_last_error(), (unsigned long long)cells);
            break;
        }
        cells++;
        ASSERT(cells < 100000000);
    }
    /* Dropping the data makes room again. */
    TRY(numagc_frame_leave(s, f));
    TRY(numagc_collect_global(s));
    for (int i = 0; i < 1000; i++) {
        TRY(numagc_frame_enter(s, &g));
        numagc_value kids[2] = {NUMAGC_NIL, NUMAGC_NIL};
        TRY(numagc_alloc_mixed(s, job->node, kids, 2, &cells, 1, &cell));
        TRY(numagc_frame_leave(s, g));
    }
    return NUMAGC_OK;
}

static void misuse(numagc_runtime *rt) {
    numagc_runtime *none = NULL;
    numagc_config *cfg = example_config();

    /* Configuration: a bad value, an unknown name, settings that do not fit. */
    EXPECT(numagc_config_set(cfg, "local-heap", "12 parsecs"), NUMAGC_ERR_INVALID_CONFIG);
    EXPECT(numagc_config_set(cfg, "nursery", "1M"), NUMAGC_ERR_INVALID_CONFIG);
    CHECK(numagc_config_set(cfg, "vprocs", "2"));
    CHECK(numagc_config_set(cfg, "local-heap", "1M"));
    CHECK(numagc_config_set(cfg, "max-heap", "2M"));
    EXPECT(numagc_runtime_new(cfg, &none), NUMAGC_ERR_INVALID_CONFIG);
    if (none != NULL) failures++;

    /* NULL runtime, scope, output, callback. */
    EXPECT(numagc_runtime_new(cfg, NULL), NUMAGC_ERR_NULL_ARGUMENT);
    EXPECT(numagc_run_on(NULL, 0, leave_frame_open, NULL), NUMAGC_ERR_NULL_ARGUMENT);
    EXPECT(numagc_run_on(rt, 0, NULL, NULL), NUMAGC_ERR_NULL_ARGUMENT);
    EXPECT(numagc_collect_minor(NULL), NUMAGC_ERR_NULL_ARGUMENT);
    EXPECT(numagc_stats_json(rt, NULL), NUMAGC_ERR_NULL_ARGUMENT);
    EXPECT(numagc_run_on(rt, 99, leave_frame_open, NULL), NUMAGC_ERR_MISUSE);

    /* Misuse inside a callback, then its scope after it returned. */
    CHECK(numagc_run_on(rt, 1, misuse_in_callback, rt));
    numagc_value v;
    EXPECT(numagc_alloc_vector(kept_scope, NULL, 0, &v), NUMAGC_ERR_NOT_ON_VPROC);

    /* Returning with a frame open. */
    EXPECT(numagc_run_on(rt, 0, leave_frame_open, NULL), NUMAGC_ERR_UNBALANCED_FRAME);

    /* The heap limit, on a runtime of its own. */
    numagc_runtime *small = NULL;
    CHECK(numagc_config_set(cfg, "vprocs", "1"));
    CHECK(numagc_config_set(cfg, "local-heap", "256K"));
    CHECK(numagc_config_set(cfg, "chunk-size", "64K"));
    CHECK(numagc_config_set(cfg, "global-gc-threshold", "256K"));
    CHECK(numagc_config_set(cfg, "max-heap", "1M"));
    CHECK(numagc_config_set(cfg, "pin", "false"));
    CHECK(numagc_runtime_new(cfg, &small));
    size_t offsets[2] = {0, 1};
    struct heap_job heap_job = {0, NUMAGC_OK};
    CHECK(numagc_register_mixed(small, "node", 3, offsets, 2, false, &heap_job.node));
    CHECK(numagc_run_on(small, 0, fill_heap, &heap_job));
    if (heap_job.outcome != NUMAGC_ERR_HEAP_LIMIT) failures++;
    CHECK(numagc_runtime_free(small));
    CHECK(numagc_config_free(cfg));

    /* A global root freed twice. */
    numagc_global g;
    struct job job;
    int saved = DEPTH;
    DEPTH = 2;
    CHECK(numagc_run_on(rt, 0, make_long_lived, &job));
    DEPTH = saved;
    g = job.long_lived;
    CHECK(numagc_global_free(g));
    EXPECT(numagc_global_free(g), NUMAGC_ERR_BAD_VALUE);
    CHECK(numagc_global_free(job.results));
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv) {
    if (argc > 1) DEPTH = atoi(argv[1]);
    if (DEPTH < 4 || DEPTH > 24) {
        fprintf(stderr, "usage: %s [depth 4..24]\n", argv[0]);
        return 2;
    }
    numagc_config *cfg = example_config();
    CHECK(numagc_config_set(cfg, "vprocs", "2"));
    CHECK(numagc_config_set(cfg, "pin", "false"));
    CHECK(numagc_config_set(cfg, "local-heap", "256K"));
    CHECK(numagc_config_set(cfg, "chunk-size", "64K"));
    CHECK(numagc_config_set(cfg, "global-gc-threshold", "1M"));
    CHECK(numagc_config_set(cfg, "verify", getenv("TREES_VERIFY") ? getenv("TREES_VERIFY") : "true"));
    numagc_runtime *rt;
    CHECK(numagc_runtime_new(cfg, &rt));
    CHECK(numagc_config_free(cfg));

    size_t offsets[2] = {0, 1};
    CHECK(numagc_register_mixed(rt, "node", 3, offsets, 2, false, &NODE));

    struct job job;
    CHECK(numagc_run_on(rt, 0, make_long_lived, &job));
    CHECK(numagc_run_each(rt, work, &job));
    CHECK(numagc_run_on(rt, 1, check_long_lived, &job));
    CHECK(numagc_global_free(job.long_lived));
    CHECK(numagc_global_free(job.results));

    char *json;
    CHECK(numagc_stats_json(rt, &json));
    if (strstr(json, "\"total\"") == NULL || strstr(json, "\"minor\"") == NULL) {
        fprintf(stderr, "unexpected statistics: %s\n", json);
        failures++;
    }
    printf("trees: statistics JSON of %zu bytes\n", strlen(json));
    CHECK(numagc_string_free(json));

    misuse(rt);

    CHECK(numagc_runtime_free(rt));
    if (failures > 0) {
        fprintf(stderr, "trees: %d checks failed\n", failures);
        return 1;
    }
    printf("trees: all checks passed\n");
    return 0;
}
