/* Every aligned-allocation entry point of the C library called with a
 * table of alignments and sizes (0, 48, 2 MiB, 1 GiB, 1 << 40, non-powers
 * of two, absurd values); one line per call:
 *   <function> <alignment> <size> <1 served | 0 refused> <errno or return code>
 * Run by tests/ld_preload.rs twice, with the C library's own allocator and
 * with libnumagc_malloc.so preloaded, which compares the two outcomes.
 * A served chunk is checked here: aligned, both ends writable, usable size
 * at least the size, realloc keeps its data, free works (and, preloaded,
 * it comes from the heap manager). A failed check exits with status 2. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(c, what) do { if (!(c)) { fprintf(stderr, "check failed: %s: %s (line %d)\n", what, #c, __LINE__); exit(2); } } while (0)

static int (*owns)(const void *);

/* The alignment the caller can count on for a served request. */
static size_t promised(const char *fn, size_t align) {
    if (strcmp(fn, "valloc") == 0 || strcmp(fn, "pvalloc") == 0) return (size_t)sysconf(_SC_PAGESIZE);
    if (align <= 16) return 16;
    size_t a = 16;
    while (a < align) a <<= 1; /* a power of two at least `align` */
    return a;
}

static void check_chunk(const char *fn, size_t align, size_t size, unsigned char *p) {
    char what[128];
    snprintf(what, sizeof what, "%s(%zu, %zu) = %p", fn, align, size, (void *)p);
    CHECK(((uintptr_t)p % promised(fn, align)) == 0, what);
    CHECK(malloc_usable_size(p) >= size, what);
    if (owns) CHECK(owns(p), what);
    if (size > 0) {
        p[0] = 0x5a;
        p[size - 1] = 0xa5;
    }
    unsigned char *q = realloc(p, size + 100);
    CHECK(q != NULL, what);
    if (size > 0) CHECK(q[0] == 0x5a && q[size - 1] == 0xa5, what);
    q[size + 99] = 1;
    free(q);
}

static void report(const char *fn, size_t align, size_t size, void *p, int err) {
    printf("%s %zu %zu %d %d\n", fn, align, size, p != NULL, p != NULL ? 0 : err);
    fflush(stdout);
    if (p) check_chunk(fn, align, size, p);
}

int main(void) {
    owns = (int (*)(const void *))dlsym(RTLD_DEFAULT, "numagc_malloc_owns");
    printf("glibc %s\n", gnu_get_libc_version());
    const size_t MiB = (size_t)1 << 20;
    const size_t aligns[] = {
        0, 1, 4, 8, 16, 17, 24, 32, 48, 100, 4096, 12288, MiB, 2 * MiB, 3 * MiB,
        4 * MiB, 8 * MiB, (size_t)1 << 30, (size_t)1 << 40, (size_t)1 << 62,
        ((size_t)1 << 62) + 1, (size_t)1 << 63, ((size_t)1 << 63) + 1, SIZE_MAX / 2,
        SIZE_MAX,
    };
    const size_t sizes[] = {
        0, 16, 5000, 3 * MiB, SIZE_MAX, SIZE_MAX - 2 * MiB, SIZE_MAX / 2, (size_t)1 << 62,
    };
    for (size_t i = 0; i < sizeof aligns / sizeof *aligns; i++) {
        for (size_t j = 0; j < sizeof sizes / sizeof *sizes; j++) {
            size_t a = aligns[i], s = sizes[j];
            void *p = (void *)1;
            int rc = posix_memalign(&p, a, s);
            if (rc != 0) CHECK(p == (void *)1, "posix_memalign wrote *out on failure");
            report("posix_memalign", a, s, rc == 0 ? p : NULL, rc);

            errno = 0;
            p = aligned_alloc(a, s);
            report("aligned_alloc", a, s, p, errno);

            errno = 0;
            p = memalign(a, s);
            report("memalign", a, s, p, errno);
        }
    }
    for (size_t j = 0; j < sizeof sizes / sizeof *sizes; j++) {
        errno = 0;
        void *p = valloc(sizes[j]);
        report("valloc", 0, sizes[j], p, errno);
        errno = 0;
        p = pvalloc(sizes[j]);
        report("pvalloc", 0, sizes[j], p, errno);
    }
    printf("memalign_cases: done\n");
    return 0;
}
