/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucp_failover_int.h"

#include <ucs/config/parser.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/*
 * The lane failover's configuration, UCX_UCP_FAILOVER_* (DESIGN.md section
 * 7; docs/rc_varuna.7.md): its table, in UCX's global list so that ucx_info
 * lists it, read and checked. A value that cannot be parsed or is out of
 * range turns the lane failover off, with one error.
 *
 * Parsed when libucp loads, and again only when one of the variables has
 * changed since: every use (each failure, each answer to a peer, each lane
 * UCP selects for memory access, patch 0010) used to parse them all again.
 * Not fixed at UCP context creation: a process may set a variable between
 * two failures (the gtest cases do), and it applies from the next use, as
 * it did when every use parsed.
 */

/* What the table fills in: the settings, and the report file */
typedef struct {
    ucp_failover_config_t super;
    char                  *report;
} ucp_failover_opts_t;

static ucs_config_field_t ucp_failover_config_table[] = {
  {"ENABLE", "y",
   "Move the traffic of a lane whose transport endpoint failed to another\n"
   "lane to the same peer with the same transport (on the same memory domain\n"
   "if there is one, else on another: remote keys and buffers translated),\n"
   "resending only what the transport says never executed (transports with\n"
   "UCT_IFACE_FLAG_EP_OUTSTANDING_PURGE), in any error handling mode.\n"
   "n: the endpoint fails, as without it.",
   ucs_offsetof(ucp_failover_opts_t, super.enable), UCS_CONFIG_TYPE_BOOL},

  {"SPARE_LANE", "y",
   "When UCP selects a lane for remote memory access or atomics on such a\n"
   "transport, add a second lane of the same transport on another local and\n"
   "remote device, if there is one: somewhere to move the traffic when both\n"
   "paths of the lane fail, for endpoints that would otherwise have one lane\n"
   "(RMA-only programs, OpenSHMEM, MPI one-sided). It costs that lane's\n"
   "connection (for rc_varuna two QPs) per endpoint. n: no spare lane.",
   ucs_offsetof(ucp_failover_opts_t, super.spare_lane), UCS_CONFIG_TYPE_BOOL},

  {"TIMEOUT", "2s",
   "How long a failover waits for the peer's answer; then the endpoint fails.\n"
   "A lane that waits for the lane it carried to be connected again waits\n"
   "twice this.",
   ucs_offsetof(ucp_failover_opts_t, super.timeout), UCS_CONFIG_TYPE_TIME},

  {"REBUILD_INTERVAL", "1s",
   "After a lane's traffic moved to another lane, how often to try to connect\n"
   "the failed lane again on its own devices (a new transport endpoint on each\n"
   "side, proven by one message before it carries anything). The interval\n"
   "doubles after each try that fails, up to 32 times this value. When a try\n"
   "works, the lane takes its traffic back, and is there for the next\n"
   "failure of the other lane. 0: never (the next failure of the other lane\n"
   "ends the endpoint).",
   ucs_offsetof(ucp_failover_opts_t, super.rebuild_interval),
   UCS_CONFIG_TYPE_TIME},

  {"REPORT", "",
   "Append one JSON line per lane failover to this file (empty: none).",
   ucs_offsetof(ucp_failover_opts_t, report), UCS_CONFIG_TYPE_STRING},

  {NULL}
};

#define UCP_FAILOVER_CONFIG_PREFIX "UCP_FAILOVER_"
#define UCP_FAILOVER_CONFIG_NUM_VARS \
    (ucs_static_array_size(ucp_failover_config_table) - 1)

UCS_CONFIG_DECLARE_TABLE(ucp_failover_config_table, "UCP lane failover",
                         UCP_FAILOVER_CONFIG_PREFIX, ucp_failover_opts_t)

/* The settings as parsed last, and the values of the variables they were
 * parsed from (NULL: unset, or no memory to keep the value, which makes
 * the next use parse again) */
static struct {
    pthread_mutex_t     lock;
    int                 parsed;
    ucp_failover_opts_t opts;
    char                *env[UCP_FAILOVER_CONFIG_NUM_VARS];
} ucp_failover_config_cache = {
    .lock = PTHREAD_MUTEX_INITIALIZER
};

/* UCX_UCP_FAILOVER_TIMEOUT's range: a failover holds the lane's traffic
 * that long at the most */
#define UCP_FAILOVER_TIMEOUT_MIN 1e-3
#define UCP_FAILOVER_TIMEOUT_MAX 3600.0
/* UCX_UCP_FAILOVER_REBUILD_INTERVAL's range, besides 0 (never) */
#define UCP_FAILOVER_REBUILD_MIN 1e-3
#define UCP_FAILOVER_REBUILD_MAX 3600.0

/* 0 if the report file cannot be opened for appending (errno says why).
 * Tried when the process loads libucp, so that a wrong path is an error
 * then and not a warning at the first lane failover; again only when the
 * path changes (the configuration is parsed again when a variable
 * changes). */
static int ucp_failover_report_writable(const char *path)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char checked[PATH_MAX];
    int writable = 1;
    int fd;

    if (path[0] == '\0') {
        return 1;
    }
    pthread_mutex_lock(&lock);
    if (strcmp(path, checked) != 0) {
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (fd < 0) {
            writable = 0;
        } else {
            close(fd);
            ucs_strncpy_zero(checked, path, sizeof(checked));
        }
    }
    pthread_mutex_unlock(&lock);
    return writable;
}

/* Released with ucs_config_parser_release_opts(). A value that cannot be
 * parsed or is out of range, or a report file that cannot be written,
 * turns the lane failover off (the endpoint fails as without it) and says
 * so, once per process. */
static void ucp_failover_config_parse(ucp_failover_opts_t *opts)
{
    ucp_failover_config_t *config = &opts->super;
    static int said;

    if (ucs_config_parser_fill_opts(opts, ucp_failover_config_table,
                                    UCS_DEFAULT_ENV_PREFIX,
                                    UCP_FAILOVER_CONFIG_PREFIX,
                                    0) != UCS_OK) {
        if (!said++) {
            ucs_error("UCP lane failover: a UCX_UCP_FAILOVER_* value cannot "
                      "be parsed (above): the lane failover is off");
        }
        ucs_config_parser_set_default_values(opts,
                                             ucp_failover_config_table);
        config->enable = 0;
    } else if ((config->timeout < UCP_FAILOVER_TIMEOUT_MIN) ||
               (config->timeout > UCP_FAILOVER_TIMEOUT_MAX)) {
        if (!said++) {
            ucs_error("UCX_UCP_FAILOVER_TIMEOUT=%gs is out of range (%gs to "
                      "%gs): the lane failover is off", config->timeout,
                      UCP_FAILOVER_TIMEOUT_MIN, UCP_FAILOVER_TIMEOUT_MAX);
        }
        config->enable = 0;
    } else if ((config->rebuild_interval != 0) &&
               ((config->rebuild_interval < UCP_FAILOVER_REBUILD_MIN) ||
                (config->rebuild_interval > UCP_FAILOVER_REBUILD_MAX))) {
        if (!said++) {
            ucs_error("UCX_UCP_FAILOVER_REBUILD_INTERVAL=%gs is out of range "
                      "(0, or %gs to %gs): the lane failover is off",
                      config->rebuild_interval, UCP_FAILOVER_REBUILD_MIN,
                      UCP_FAILOVER_REBUILD_MAX);
        }
        config->enable = 0;
    } else if (!ucp_failover_report_writable(opts->report)) {
        if (!said++) {
            ucs_error("UCX_UCP_FAILOVER_REPORT=%s cannot be written (%s): "
                      "the lane failover is off", opts->report,
                      strerror(errno));
        }
        config->enable = 0;
    }
}

/* The value of the variable of the table's field i; NULL if it is unset */
static const char *ucp_failover_config_getenv(size_t i)
{
    char name[128];

    ucs_snprintf_zero(name, sizeof(name), "%s%s%s", UCS_DEFAULT_ENV_PREFIX,
                      UCP_FAILOVER_CONFIG_PREFIX,
                      ucp_failover_config_table[i].name);
    return getenv(name);
}

/* The variables have the values the cache was parsed from (UCX reads its
 * configuration files once per process: only the environment changes) */
static int ucp_failover_config_env_same(void)
{
    const char *value, *kept;
    size_t i;

    for (i = 0; i < UCP_FAILOVER_CONFIG_NUM_VARS; ++i) {
        value = ucp_failover_config_getenv(i);
        kept  = ucp_failover_config_cache.env[i];
        if ((value == NULL) ? (kept != NULL) :
                              ((kept == NULL) || (strcmp(value, kept) != 0))) {
            return 0;
        }
    }
    return 1;
}

static void ucp_failover_config_env_release(void)
{
    size_t i;

    for (i = 0; i < UCP_FAILOVER_CONFIG_NUM_VARS; ++i) {
        ucs_free(ucp_failover_config_cache.env[i]);
        ucp_failover_config_cache.env[i] = NULL;
    }
}

static void ucp_failover_config_env_keep(void)
{
    const char *value;
    size_t i;

    for (i = 0; i < UCP_FAILOVER_CONFIG_NUM_VARS; ++i) {
        value = ucp_failover_config_getenv(i);
        ucp_failover_config_cache.env[i] = (value == NULL) ? NULL :
                                           ucs_strdup(value,
                                                      "ucp_failover_env");
    }
}

/* Called with the cache's lock held: the cache holds the settings of the
 * variables as they are now */
static void ucp_failover_config_update(void)
{
    if (ucp_failover_config_cache.parsed) {
        if (ucp_failover_config_env_same()) {
            return;
        }
        ucs_config_parser_release_opts(&ucp_failover_config_cache.opts,
                                       ucp_failover_config_table);
        ucp_failover_config_env_release();
    }
    /* the values first: one set meanwhile differs from them, and the next
     * use parses again */
    ucp_failover_config_env_keep();
    ucp_failover_config_parse(&ucp_failover_config_cache.opts);
    ucp_failover_config_cache.parsed = 1;
}

void ucp_failover_config(ucp_failover_config_t *config)
{
    pthread_mutex_lock(&ucp_failover_config_cache.lock);
    ucp_failover_config_update();
    *config = ucp_failover_config_cache.opts.super;
    pthread_mutex_unlock(&ucp_failover_config_cache.lock);
}

ucs_status_t ucp_failover_config_report(char **path_p)
{
    ucs_status_t status = UCS_OK;
    const char *report;

    pthread_mutex_lock(&ucp_failover_config_cache.lock);
    ucp_failover_config_update();
    report = ucp_failover_config_cache.opts.report;
    if (report[0] == '\0') {
        *path_p = NULL;
    } else {
        *path_p = ucs_strdup(report, "ucp_failover_report");
        if (*path_p == NULL) {
            status = UCS_ERR_NO_MEMORY;
        }
    }
    pthread_mutex_unlock(&ucp_failover_config_cache.lock);
    return status;
}

UCS_STATIC_INIT {
    ucp_failover_config_t config;

    UCS_CONFIG_ADD_TABLE(ucp_failover_config_table, &ucs_config_global_list);
    /* read once now, too: UCX counts a variable as used when it is read,
     * and warns about unused ones when the first worker is created, long
     * before any failure reads them; and a bad value is an error when the
     * program starts */
    ucp_failover_config(&config);
}

UCS_STATIC_CLEANUP {
    if (ucp_failover_config_cache.parsed) {
        ucs_config_parser_release_opts(&ucp_failover_config_cache.opts,
                                       ucp_failover_config_table);
        ucp_failover_config_env_release();
    }
    ucs_list_del(&ucp_failover_config_table_config_entry.list);
}

double ucp_failover_timeout(void)
{
    ucp_failover_config_t config;

    ucp_failover_config(&config);
    /* one out of range turned the failover off; the peer's queries are
     * still answered, within a time that makes sense */
    return ucs_min(ucs_max(config.timeout, UCP_FAILOVER_TIMEOUT_MIN),
                   UCP_FAILOVER_TIMEOUT_MAX);
}
