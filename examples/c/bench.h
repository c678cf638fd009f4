/*
 * bench.h: what the benchmarks in C (parfib.c, binarytrees.c, coins.c)
 * share: a runtime configured from the NUMAGC_* variables and the
 * optional vproc count of the command line, the registration of the
 * layouts whose header words the program has as constants, and one way of
 * reporting an error (the program's name, what failed, the status and
 * numagc's message; exit status 1).
 */
#ifndef NUMAGC_EXAMPLE_BENCH_H
#define NUMAGC_EXAMPLE_BENCH_H

#include <numagc_inline.h>
#include <stdio.h>

/* Reports the failure of `what` with status rc; returns 1 (main's exit). */
static int bench_fail(const char *prog, const char *what, int rc) {
    fprintf(stderr, "%s: %s: %s: %s\n", prog, what, numagc_status_name(rc), numagc_last_error());
    return 1;
}

/* A runtime from the NUMAGC_* settings, with `vprocs` vprocs unless it is
 * NULL, and the n layouts of `fields` value fields each, named `names`,
 * registered first, in order: their ids are NUMAGC_FIRST_DESCRIPTOR_ID,
 * + 1, ..., which the program's header words were compiled for (checked).
 * 0 and *out set, or 1 with the error reported. */
static int bench_runtime(const char *prog, const char *vprocs, const char *const *names,
                         const size_t *fields, size_t n, numagc_runtime **out) {
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
        size_t values[32];
        for (size_t i = 0; i < fields[k] && i < 32; i++) values[i] = i;
        numagc_desc d;
        rc = numagc_register_mixed(rt, names[k], fields[k], values, fields[k], false, &d);
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

#endif
