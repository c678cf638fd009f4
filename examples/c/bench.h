/*
 * bench.h: what the benchmarks in C (parfib.c, binarytrees.c, coins.c,
 * gcbench.c)
 * share: their integer arguments, a runtime configured from the NUMAGC_*
 * variables and the optional vproc count of the command line, the
 * registration of the layouts whose header words the program has as
 * constants, one way of reporting an error (the program's name, what
 * failed, the status and numagc's message; exit status 1), and the
 * result of register code: a value and the allocation pointer, the
 * status of a failed slow path beside them.
 */
#ifndef NUMAGC_EXAMPLE_BENCH_H
#define NUMAGC_EXAMPLE_BENCH_H

#include <numagc_inline.h>
#include <stdio.h>
#include <stdlib.h>

/* A value and the allocation pointer after it, returned in two registers
 * by register code. A failed slow path leaves its status in at_status
 * (where a compiler would raise) and says so in the pair as the program
 * chooses (obj 0, or hp 0 where 0 is a value). */
typedef struct {
    uint64_t obj;
    size_t hp;
} at;
static _Thread_local int at_status;

/* numagc_push_at, or NULL with at_status set when the root stack is full. */
static inline uint64_t *bench_push_at(numagc_mutator *m, uint64_t *sp, size_t n) {
    uint64_t *top = numagc_push_at(m, sp, n);
    if (__builtin_expect(top == NULL, 0)) at_status = NUMAGC_ERR_INVALID_ARGUMENT;
    return top;
}

/* The decimal integer `text`, argument `name` of `prog`, in lo..hi: 0 and
 * *out set, or 2 (main's exit status for a usage error) with the error
 * reported. */
static int bench_int_arg(const char *prog, const char *name, const char *text, long long lo,
                         long long hi, long long *out) {
    char *end;
    long long v = strtoll(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "%s: %s must be %lld..%lld\n", prog, name, lo, hi);
        return 2;
    }
    *out = v;
    return 0;
}

/* Reports the failure of `what` with status rc; returns 1 (main's exit). */
static int bench_fail(const char *prog, const char *what, int rc) {
    fprintf(stderr, "%s: %s: %s: %s\n", prog, what, numagc_status_name(rc), numagc_last_error());
    return 1;
}

/* The most value fields a layout registered here may have. */
#define BENCH_MAX_VALUE_FIELDS 32

/* A runtime from the NUMAGC_* settings, with `vprocs` vprocs unless it is
 * NULL, and n immutable layouts registered first, in order: layout k is
 * named names[k], has sizes[k] fields of which the first values[k] hold
 * values (the rest are raw words). Their ids are NUMAGC_FIRST_DESCRIPTOR_ID,
 * + 1, ..., which the program's header words were compiled for (checked).
 * A layout of more than BENCH_MAX_VALUE_FIELDS value fields, or of more
 * value fields than fields, is refused before the runtime starts.
 * 0 and *out set, or 1 with the error reported. */
static int bench_runtime_layouts(const char *prog, const char *vprocs, const char *const *names,
                                 const size_t *sizes, const size_t *values, size_t n,
                                 numagc_runtime **out) {
    for (size_t k = 0; k < n; k++) {
        if (values[k] > BENCH_MAX_VALUE_FIELDS || values[k] > sizes[k]) {
            fprintf(stderr, "%s: %s has %zu value fields of %zu: at most %d, and at most its size\n",
                    prog, names[k], values[k], sizes[k], BENCH_MAX_VALUE_FIELDS);
            return 1;
        }
    }
    numagc_config *cfg;
    int rc = numagc_config_from_env(&cfg);
    if (rc != NUMAGC_OK) return bench_fail(prog, "configuration", rc);
    if (vprocs != NULL && (rc = numagc_config_set(cfg, "vprocs", vprocs)) != NUMAGC_OK) {
        numagc_config_free(cfg);
        return bench_fail(prog, "vprocs", rc);
    }
    numagc_runtime *rt;
    rc = numagc_runtime_new(cfg, &rt);
    numagc_config_free(cfg);
    if (rc != NUMAGC_OK) return bench_fail(prog, "starting the runtime", rc);
    for (size_t k = 0; k < n; k++) {
        size_t offsets[BENCH_MAX_VALUE_FIELDS];
        size_t v = values[k];
        for (size_t i = 0; i < v; i++) offsets[i] = i;
        numagc_desc d;
        rc = numagc_register_mixed(rt, names[k], sizes[k], offsets, v, false, &d);
        if (rc != NUMAGC_OK) {
            numagc_runtime_free(rt);
            return bench_fail(prog, names[k], rc);
        }
        if (d != NUMAGC_FIRST_DESCRIPTOR_ID + k) {
            fprintf(stderr, "%s: %s got descriptor %u, the program was compiled for %u\n", prog,
                    names[k], (unsigned)d, (unsigned)(NUMAGC_FIRST_DESCRIPTOR_ID + k));
            numagc_runtime_free(rt);
            return 1;
        }
    }
    *out = rt;
    return 0;
}

/* bench_runtime_layouts with every field of every layout a value, layout k
 * of fields[k] fields. */
static inline int bench_runtime(const char *prog, const char *vprocs, const char *const *names,
                                const size_t *fields, size_t n, numagc_runtime **out) {
    return bench_runtime_layouts(prog, vprocs, names, fields, fields, n, out);
}

#endif
