/* A C program that uses the C library's allocator in every way the
 * heap manager exports; run with LD_PRELOAD=libnumagc_malloc.so by
 * tests/ld_preload.rs. With the argument "double-free" it frees twice. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "check failed: %s (line %d)\n", #c, __LINE__); exit(2); } } while (0)

static int (*owns)(const void *);

#define SLOTS 64
static void *handed[SLOTS];

static void *producer(void *arg) {
    (void)arg;
    for (int i = 0; i < SLOTS; i++) {
        size_t n = 16 + (size_t)i * 977;
        handed[i] = malloc(n);
        memset(handed[i], i, n);
    }
    return NULL;
}

static void *worker(void *arg) {
    uintptr_t seed = (uintptr_t)arg;
    for (int round = 0; round < 2000; round++) {
        size_t n = (seed * 2654435761u + (size_t)round * 40503u) % 20000;
        unsigned char *p = malloc(n + 1);
        CHECK(p && owns(p));
        memset(p, (int)round, n + 1);
        p = realloc(p, n + 100);
        CHECK(p[n] == (unsigned char)round);
        free(p);
    }
    return NULL;
}

static volatile int stop_churn;

static void *churn(void *arg) {
    uintptr_t x = (uintptr_t)arg;
    while (!stop_churn) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        size_t n = (x >> 33) % 4 == 0 ? (x >> 20) % (3u << 20) : (x >> 20) % 600000;
        unsigned char *p = malloc(n + 1);
        CHECK(p);
        p[n] = 1;
        free(p);
    }
    return NULL;
}

/* Forks while other threads allocate and free (local heaps and large
 * chunks come and go); every child must be able to allocate. */
static int fork_test(void) {
    pthread_t ts[2];
    for (uintptr_t i = 0; i < 2; i++) CHECK(pthread_create(&ts[i], NULL, churn, (void *)(i + 7)) == 0);
    for (int i = 0; i < 200; i++) {
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            void *a = malloc(700000), *b = malloc(5u << 20), *c = malloc(40);
            if (!a || !b || !c) _exit(3);
            memset(a, 1, 700000);
            memset(b, 2, 5u << 20);
            free(a);
            free(b);
            free(c);
            _exit(0);
        }
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    stop_churn = 1;
    for (int i = 0; i < 2; i++) pthread_join(ts[i], NULL);
    printf("malloc_user fork: ok\n");
    return 0;
}

int main(int argc, char **argv) {
    owns = (int (*)(const void *))dlsym(RTLD_DEFAULT, "numagc_malloc_owns");
    CHECK(owns != NULL); /* the heap manager is loaded */

    if (argc > 1 && strcmp(argv[1], "fork") == 0) return fork_test();

    if (argc > 1 && strcmp(argv[1], "double-free") == 0) {
        void *volatile p = malloc(32); /* volatile: not optimised away */
        free(p);
        free(p);
        return 0;
    }

    char *s = strdup("heap manager"); /* allocated inside the C library */
    CHECK(s && owns(s) && strcmp(s, "heap manager") == 0);
    free(s);

    size_t sizes[] = {0, 1, 24, 100, 4096, 5000, 100000, 1 << 20, 3 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        unsigned char *p = malloc(sizes[i]);
        CHECK(p && owns(p) && ((uintptr_t)p % 16) == 0);
        CHECK(malloc_usable_size(p) >= sizes[i]);
        memset(p, 0xab, sizes[i]);
        free(p);
    }

    int *z = calloc(1000, sizeof(int));
    for (int i = 0; i < 1000; i++) CHECK(z[i] == 0);
    free(z);
    /* A large chunk freed goes to the heap manager's cache of mappings and
       the next request of its size takes it back, dirty: calloc must still
       return zeroes. Several rounds, with the dirt written everywhere. */
    for (int round = 0; round < 3; round++) {
        size_t big = (size_t)8 << 20;
        unsigned char *d = malloc(big);
        CHECK(d && owns(d));
        memset(d, 0xa5, big);
        free(d);
        unsigned char *zb = calloc(big / 8, 8);
        CHECK(zb && owns(zb));
        for (size_t i = 0; i < big; i += 8) CHECK(*(uint64_t *)(zb + i) == 0);
        free(zb);
    }
    volatile size_t huge = SIZE_MAX / 2;
    CHECK(calloc(huge, 4) == NULL); /* overflow refused */

    char *r = malloc(10);
    strcpy(r, "123456789");
    r = realloc(r, 200000);
    CHECK(strcmp(r, "123456789") == 0);
    r = realloc(r, 5);
    CHECK(memcmp(r, "12345", 5) == 0);
    CHECK(realloc(r, 0) == NULL);

    void *a = NULL;
    CHECK(posix_memalign(&a, 4096, 1000) == 0 && ((uintptr_t)a % 4096) == 0);
    free(a);
    CHECK(posix_memalign(&a, 3, 8) != 0); /* not a power of two */
    void *b = aligned_alloc(64, 640);
    CHECK(b && ((uintptr_t)b % 64) == 0);
    free(b);
    void *m = memalign(256, 3000);
    CHECK(m && ((uintptr_t)m % 256) == 0);
    free(m);

    /* Cross-thread frees: memory made on one thread, freed on this one. */
    pthread_t t;
    CHECK(pthread_create(&t, NULL, producer, NULL) == 0);
    pthread_join(t, NULL);
    for (int i = 0; i < SLOTS; i++) {
        CHECK(((unsigned char *)handed[i])[0] == (unsigned char)i);
        free(handed[i]);
    }

    pthread_t ws[4];
    for (uintptr_t i = 0; i < 4; i++) CHECK(pthread_create(&ws[i], NULL, worker, (void *)(i + 1)) == 0);
    for (int i = 0; i < 4; i++) pthread_join(ws[i], NULL);

    printf("malloc_user: ok\n");
    return 0;
}
