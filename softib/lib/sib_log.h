/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Logging of the software RDMA device. One macro, gated by $SOFTIB_LOG
 * (error, warn, info, debug, trace; default warn). The library is loaded
 * into arbitrary programs, so it never prints anything else.
 */
#ifndef SIB_LOG_H
#define SIB_LOG_H

enum sib_log_level {
    SIB_LOG_ERROR,
    SIB_LOG_WARN,
    SIB_LOG_INFO,
    SIB_LOG_DEBUG,
    SIB_LOG_TRACE
};

extern int sib_log_level;

void sib_log_init(void);
void sib_log_print(enum sib_log_level level, const char *file, int line,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#define sib_log(_level, _fmt, ...) \
    do { \
        if ((_level) <= sib_log_level) { \
            sib_log_print((_level), __FILE__, __LINE__, _fmt, ## __VA_ARGS__); \
        } \
    } while (0)

#define sib_log_error(_fmt, ...) sib_log(SIB_LOG_ERROR, _fmt, ## __VA_ARGS__)
#define sib_log_warn(_fmt, ...)  sib_log(SIB_LOG_WARN, _fmt, ## __VA_ARGS__)
#define sib_log_info(_fmt, ...)  sib_log(SIB_LOG_INFO, _fmt, ## __VA_ARGS__)
#define sib_log_debug(_fmt, ...) sib_log(SIB_LOG_DEBUG, _fmt, ## __VA_ARGS__)
#define sib_log_trace(_fmt, ...) sib_log(SIB_LOG_TRACE, _fmt, ## __VA_ARGS__)

#endif
