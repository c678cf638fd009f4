/* binarytrees in C with bump arenas: the reference point of issue 18 ("a C
 * program with bump arenas"), written as the Computer Language Benchmarks
 * Game's fastest C programs are (Jeremy Zerfas's "binary-trees C gcc #3":
 * nodes of two pointers, a memory pool per worker that is cleared wholesale
 * after each tree, the depths spread over the threads with a dynamic
 * schedule, each depth's line printed in depth order). Here the pool is a
 * plain bump arena (one block sized for the depth's tree, the bump pointer
 * reset after each tree) instead of APR's, and the threads are POSIX
 * threads taking depths from an atomic counter (OpenMP's schedule(dynamic,
 * 1)), so the program needs nothing but a C compiler and -pthread.
 *
 * Usage: peers/build/c/binarytrees DEPTH [THREADS]
 *   DEPTH: maximum tree depth (numagc's `depth`: quick 18, paper 21);
 *   THREADS: worker threads (default: the online CPUs).
 *
 * Same work and output as numagc's crates/numagc-bench/src/benchmarks/
 * binarytrees.rs: a stretch tree of depth DEPTH+1 (built, checked, freed),
 * a long-lived tree of depth DEPTH kept to the end, and 2^(DEPTH-d+4)
 * trees of each depth d = 4, 6, ..., DEPTH, every node allocated; a check
 * is the node count (a leaf counts 1). What differs from numagc (and from
 * the GC'd peers) is what the Benchmarks Game's C programs do: no collector,
 * an arena per tree released in O(1), and the stretch and long-lived trees
 * built by the main thread alone. Iterations of one depth run on one thread
 * (numagc splits them over the vprocs); with 9 equal depths at DEPTH 21,
 * two threads share them 5:4.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MIN_DEPTH 4

typedef struct node {
    struct node *left, *right;
} node;

/* A bump arena: one block, nodes handed out in order, reset wholesale. */
typedef struct {
    node *base, *next, *end;
} arena;

static void arena_init(arena *a, size_t nodes) {
    a->base = malloc(nodes * sizeof(node));
    if (!a->base) {
        perror("binarytrees: malloc");
        exit(1);
    }
    a->next = a->base;
    a->end = a->base + nodes;
}

static inline void arena_reset(arena *a) { a->next = a->base; }

static void arena_free(arena *a) { free(a->base); }

static inline node *arena_alloc(arena *a) {
    /* The arena is sized for the tree it holds, so this never fails; the
     * check is the one compare of an inline bump allocator. */
    if (__builtin_expect(a->next == a->end, 0)) {
        fputs("binarytrees: arena overflow\n", stderr);
        abort();
    }
    return a->next++;
}

static size_t tree_nodes(int depth) { return ((size_t)1 << (depth + 1)) - 1; }

static node *make(arena *a, int depth) {
    node *n = arena_alloc(a);
    if (depth > 0) {
        n->left = make(a, depth - 1);
        n->right = make(a, depth - 1);
    } else {
        n->left = n->right = NULL;
    }
    return n;
}

static int64_t check(const node *n) {
    if (n->left) return 1 + check(n->left) + check(n->right);
    return 1;
}

static int max_depth;
static int depth_count;          /* depths 4, 6, ..., max_depth */
static int64_t *sums;            /* per depth index */
static int next_depth;           /* the dynamic schedule's counter */

static void *worker(void *unused) {
    (void)unused;
    arena a;
    arena_init(&a, tree_nodes(max_depth));
    for (;;) {
        int i = __atomic_fetch_add(&next_depth, 1, __ATOMIC_RELAXED);
        if (i >= depth_count) break;
        int d = MIN_DEPTH + 2 * i;
        int64_t iterations = (int64_t)1 << (max_depth - d + MIN_DEPTH);
        int64_t sum = 0;
        for (int64_t k = 0; k < iterations; k++) {
            sum += check(make(&a, d));
            arena_reset(&a);
        }
        sums[i] = sum;
    }
    arena_free(&a);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs("usage: binarytrees DEPTH [THREADS]\n", stderr);
        return 2;
    }
    max_depth = atoi(argv[1]);
    if (max_depth < MIN_DEPTH + 2) max_depth = MIN_DEPTH + 2;
    long threads = argc > 2 ? atol(argv[2]) : sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1) threads = 1;

    {
        arena a;
        arena_init(&a, tree_nodes(max_depth + 1));
        int64_t c = check(make(&a, max_depth + 1));
        printf("stretch tree of depth %d\t check: %lld\n", max_depth + 1, (long long)c);
        arena_free(&a);
    }

    arena long_lived;
    arena_init(&long_lived, tree_nodes(max_depth));
    node *long_tree = make(&long_lived, max_depth);

    depth_count = (max_depth - MIN_DEPTH) / 2 + 1;
    sums = calloc((size_t)depth_count, sizeof *sums);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    if (!sums || !tids) {
        perror("binarytrees: calloc");
        return 1;
    }
    /* The main thread is worker 0, as OpenMP's master thread is. */
    for (long t = 1; t < threads; t++) {
        if (pthread_create(&tids[t], NULL, worker, NULL) != 0) {
            perror("binarytrees: pthread_create");
            return 1;
        }
    }
    worker(NULL);
    for (long t = 1; t < threads; t++) pthread_join(tids[t], NULL);

    for (int i = 0; i < depth_count; i++) {
        int d = MIN_DEPTH + 2 * i;
        printf("%lld\t trees of depth %d\t check: %lld\n",
               (long long)((int64_t)1 << (max_depth - d + MIN_DEPTH)), d, (long long)sums[i]);
    }
    printf("long lived tree of depth %d\t check: %lld\n", max_depth, (long long)check(long_tree));
    arena_free(&long_lived);
    free(sums);
    free(tids);
    return 0;
}
