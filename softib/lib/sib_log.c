/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 */
#include "sib_log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


int sib_log_level = SIB_LOG_WARN;

static const char *const sib_log_level_name[] = {
    [SIB_LOG_ERROR] = "error",
    [SIB_LOG_WARN]  = "warn",
    [SIB_LOG_INFO]  = "info",
    [SIB_LOG_DEBUG] = "debug",
    [SIB_LOG_TRACE] = "trace"
};

_Static_assert(sizeof(sib_log_level_name) / sizeof(sib_log_level_name[0]) ==
               SIB_LOG_TRACE + 1, "every log level has a name");

void sib_log_init(void)
{
    const char *env = getenv("SOFTIB_LOG");
    int level;

    if (env == NULL) {
        return;
    }

    for (level = SIB_LOG_ERROR; level <= SIB_LOG_TRACE; level++) {
        if (!strcasecmp(env, sib_log_level_name[level])) {
            sib_log_level = level;
            return;
        }
    }
}

void sib_log_print(enum sib_log_level level, const char *file, int line,
                   const char *fmt, ...)
{
    char msg[512];
    struct timespec ts;
    const char *base = strrchr(file, '/');
    int saved_errno  = errno; /* keep %m meaningful for the caller */
    va_list ap;

    errno = saved_errno;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    clock_gettime(CLOCK_MONOTONIC, &ts);
    fprintf(stderr, "[%ld.%06ld] softib[%d] %-5s %s:%d %s\n", (long)ts.tv_sec,
            ts.tv_nsec / 1000, (int)getpid(), sib_log_level_name[level],
            base ? base + 1 : file, line, msg);
    errno = saved_errno;
}
