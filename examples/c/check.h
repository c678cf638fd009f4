/*
 * check.h: the checking macros of the C examples. The including file
 * defines `static int failures`, which EXPECT counts.
 */
#ifndef NUMAGC_EXAMPLE_CHECK_H
#define NUMAGC_EXAMPLE_CHECK_H

#include <numagc.h>
#include <stdio.h>
#include <stdlib.h>

/* A call that must succeed, outside callbacks: report and stop otherwise. */
#define CHECK(call)                                                               \
    do {                                                                          \
        int rc_ = (call);                                                         \
        if (rc_ != NUMAGC_OK) {                                                   \
            fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__,     \
                    #call, numagc_status_name(rc_), numagc_last_error());         \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

/* Inside callbacks and their helpers: pass a failure up. */
#define TRY(call)                                                                 \
    do {                                                                          \
        int rc_ = (call);                                                         \
        if (rc_ != NUMAGC_OK) {                                                   \
            fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__,     \
                    #call, numagc_status_name(rc_), numagc_last_error());         \
            return rc_;                                                           \
        }                                                                         \
    } while (0)

/* A misuse: the call must return `code`. */
#define EXPECT(call, code)                                                        \
    do {                                                                          \
        int rc_ = (call);                                                         \
        if (rc_ != (code)) {                                                      \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n",          \
                    __FILE__, __LINE__, #call, numagc_status_name(rc_), #code,    \
                    numagc_last_error());                                         \
            failures++;                                                           \
        } else {                                                                  \
            printf("misuse: %-28s %s\n", #code, numagc_last_error());             \
        }                                                                         \
    } while (0)

/* A condition inside a callback: fail the callback otherwise. */
#define ASSERT(cond)                                                              \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,      \
                    #cond);                                                       \
            return NUMAGC_ERR_MISUSE;                                             \
        }                                                                         \
    } while (0)

/* The examples' configuration: the defaults, on the plan NUMAGC_PLAN
 * names when it is set (`NUMAGC_PLAN=shared ./trees` runs on the shared
 * plan); each example then sets what it needs. */
static numagc_config *example_config(void) {
    numagc_config *cfg = numagc_config_new();
    const char *plan = getenv("NUMAGC_PLAN");
    if (cfg != NULL && plan != NULL) CHECK(numagc_config_set(cfg, "plan", plan));
    return cfg;
}

#endif
