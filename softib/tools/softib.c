/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * softib: run programs on the software RDMA devices and control them.
 */
#include "softib/ctl.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#define SOFTIB_DEV_DIR  "/dev/infiniband"


static void softib_usage(FILE *out)
{
    fprintf(out,
            "usage: softib COMMAND [ARGS]\n"
            "\n"
            "  run [--] CMD [ARGS...]   run CMD on the software RDMA devices\n"
            "  status                   devices, ports, rules\n"
            "  counters [DEV]           packet and protocol counters\n"
            "  link down|up DEV:PORT    take a port's link down or up\n"
            "  drop DEV:PORT [OPTIONS]  drop packets (prints the rule id)\n"
            "  delay DEV:PORT --us N [OPTIONS]\n"
            "                           delay transmitted packets by N us\n"
            "  undo ID                  remove a drop or delay rule\n"
            "  reset                    all links up, all rules removed\n"
            "  devnodes                 create /dev/infiniband entries (root)\n"
            "\n"
            "rule options:\n"
            "  --dir tx|rx|any          direction at the port (default tx)\n"
            "  --class LIST             req,ack,read,atomic,ud,resp,all\n"
            "                           (default all)\n"
            "  --qpn N                  only this QP (sender for tx,\n"
            "                           receiver for rx)\n"
            "  --after N                let N matching packets pass first\n"
            "  --count N                then act on N packets (default all)\n"
            "\n"
            "environment: SOFTIB_DEVICES (name:ports[@ip[/ip]],...; read when\n"
            "the registry is created), SOFTIB_REGISTRY, SOFTIB_LOG\n");
}

static int softib_open(softib_ctl_t **ctl_p)
{
    int ret = softib_ctl_open(ctl_p);

    if (ret < 0) {
        fprintf(stderr, "softib: cannot open the registry: %s\n",
                strerror(-ret));
    }
    return ret;
}

/* Where the drop-in libibverbs lives: $SOFTIB_LIBDIR, next to this binary
 * (<prefix>/bin/../lib/softib), or the configured location. */
static int softib_libdir(char *buf, size_t len)
{
    const char *env = getenv("SOFTIB_LIBDIR");
    char exe[PATH_MAX], path[PATH_MAX + 32];
    const char *dir;
    struct stat st;
    ssize_t n;

    if ((env != NULL) && (*env != '\0')) {
        snprintf(buf, len, "%s", env);
        return 0;
    }

    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        dir    = dirname(exe);
        snprintf(path, sizeof(path), "%s/../lib/softib/libibverbs.so.1", dir);
        if (stat(path, &st) == 0) {
            snprintf(buf, len, "%s/../lib/softib", dir);
            return 0;
        }
    }

    snprintf(buf, len, "%s", SOFTIB_LIBDIR);
    return 0;
}

/* UCX uses a device only if /dev/infiniband/<name> is a character device
 * it can read and write; a link to /dev/null satisfies it. Creating them
 * is the one thing that needs root. */
static int softib_devnodes(softib_ctl_t *ctl, int create)
{
    char path[PATH_MAX];
    struct stat st;
    int i, missing = 0;

    for (i = 0; i < softib_ctl_num_devices(ctl); i++) {
        snprintf(path, sizeof(path), "%s/%s", SOFTIB_DEV_DIR,
                 softib_ctl_device_name(ctl, i));
        if ((stat(path, &st) == 0) && S_ISCHR(st.st_mode)) {
            continue;
        }
        if (!create) {
            missing++;
            continue;
        }
        if (((mkdir(SOFTIB_DEV_DIR, 0755) < 0) && (errno != EEXIST)) ||
            ((symlink("/dev/null", path) < 0) && (errno != EEXIST))) {
            fprintf(stderr, "softib: cannot create %s: %s\n", path,
                    strerror(errno));
            return -errno;
        }
    }

    if (missing) {
        fprintf(stderr, "softib: %d device node(s) missing under %s; UCX "
                "will not see the devices. Run `softib devnodes` once as "
                "root.\n", missing, SOFTIB_DEV_DIR);
    }
    return 0;
}

static int softib_cmd_run(int argc, char **argv)
{
    char libdir[PATH_MAX], value[2 * PATH_MAX];
    const char *old = getenv("LD_LIBRARY_PATH");
    softib_ctl_t *ctl;

    if ((argc > 0) && !strcmp(argv[0], "--")) {
        argc--;
        argv++;
    }
    if (argc < 1) {
        softib_usage(stderr);
        return 2;
    }

    if (softib_open(&ctl) < 0) {
        return 1;
    }
    softib_devnodes(ctl, geteuid() == 0);
    softib_ctl_close(ctl);

    softib_libdir(libdir, sizeof(libdir));
    snprintf(value, sizeof(value), "%s%s%s", libdir,
             ((old != NULL) && (*old != '\0')) ? ":" : "",
             (old != NULL) ? old : "");
    setenv("LD_LIBRARY_PATH", value, 1);
    setenv("SOFTIB_LIBDIR", libdir, 1);

    execvp(argv[0], argv);
    fprintf(stderr, "softib: cannot run %s: %s\n", argv[0], strerror(errno));
    return 127;
}

static int softib_cmd_status(void)
{
    struct softib_ctx_info info[64];
    softib_ctl_t *ctl;
    const char *name;
    int i, p, nports, nctx;

    if (softib_open(&ctl) < 0) {
        return 1;
    }
    for (i = 0; i < softib_ctl_num_devices(ctl); i++) {
        name   = softib_ctl_device_name(ctl, i);
        nports = softib_ctl_num_ports(ctl, name);
        for (p = 1; p <= nports; p++) {
            printf("%s:%d  lid 0x%x  %s\n", name, p,
                   softib_ctl_lid(ctl, name, (unsigned)p),
                   softib_ctl_link_get(ctl, name, (unsigned)p) ? "ACTIVE" :
                                                                  "DOWN");
        }
    }

    nctx = softib_ctl_contexts(ctl, info, 64);
    printf("%d open context(s)\n", nctx);
    for (i = 0; (i < nctx) && (i < 64); i++) {
        printf("  slot %u  pid %d  %s  udp %u/%u\n", info[i].slot, info[i].pid,
               info[i].dev, info[i].udp_port[0], info[i].udp_port[1]);
    }
    softib_ctl_close(ctl);
    return 0;
}

static int softib_cmd_counters(int argc, char **argv)
{
    const char *dev = (argc > 0) ? argv[0] : NULL;
    softib_ctl_t *ctl;
    int64_t value;
    int i;

    if (softib_open(&ctl) < 0) {
        return 1;
    }
    for (i = 0; softib_ctl_counter_name(i) != NULL; i++) {
        value = softib_ctl_counter(ctl, dev, softib_ctl_counter_name(i));
        if (value < 0) {
            fprintf(stderr, "softib: %s: %s\n", dev ? dev : "counters",
                    strerror((int)-value));
            softib_ctl_close(ctl);
            return 1;
        }
        printf("%-22s %lld\n", softib_ctl_counter_name(i), (long long)value);
    }
    softib_ctl_close(ctl);
    return 0;
}

static int softib_cmd_link(int argc, char **argv)
{
    char dev[64];
    unsigned port;
    softib_ctl_t *ctl;
    int up, ret;

    if ((argc != 2) || (strcmp(argv[0], "up") && strcmp(argv[0], "down")) ||
        (softib_ctl_parse_port(argv[1], dev, sizeof(dev), &port) < 0)) {
        softib_usage(stderr);
        return 2;
    }
    up = !strcmp(argv[0], "up");

    if (softib_open(&ctl) < 0) {
        return 1;
    }
    ret = softib_ctl_link_set(ctl, dev, port, up);
    softib_ctl_close(ctl);
    if (ret < 0) {
        fprintf(stderr, "softib: %s: %s\n", argv[1], strerror(-ret));
        return 1;
    }
    printf("%s link %s\n", argv[1], up ? "up" : "down");
    return 0;
}

static int softib_parse_classes(const char *list, unsigned *classes)
{
    static const struct {
        const char *name;
        unsigned    mask;
    } names[] = {
        { "req", SOFTIB_CLASS_REQ },      { "ack", SOFTIB_CLASS_ACK },
        { "read", SOFTIB_CLASS_READ_RESP },
        { "atomic", SOFTIB_CLASS_ATOMIC_RESP },
        { "ud", SOFTIB_CLASS_UD },        { "resp", SOFTIB_CLASS_RESPONSES },
        { "all", SOFTIB_CLASS_ALL }
    };
    char buf[128], *tok, *save = NULL;
    unsigned i;

    *classes = 0;
    snprintf(buf, sizeof(buf), "%s", list);
    for (tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            if (!strcmp(tok, names[i].name)) {
                *classes |= names[i].mask;
                break;
            }
        }
        if (i == sizeof(names) / sizeof(names[0])) {
            fprintf(stderr, "softib: unknown packet class '%s'\n", tok);
            return -EINVAL;
        }
    }
    return 0;
}

static int softib_parse_u64(const char *s, uint64_t *value)
{
    char *end;

    errno  = 0;
    *value = strtoull(s, &end, 0);
    if ((errno != 0) || (*s == '\0') || (*end != '\0')) {
        fprintf(stderr, "softib: '%s' is not a number\n", s);
        return -EINVAL;
    }
    return 0;
}

static int softib_cmd_rule(int kind, int argc, char **argv)
{
    static const struct option opts[] = {
        { "dir",   required_argument, NULL, 'd' },
        { "class", required_argument, NULL, 'c' },
        { "qpn",   required_argument, NULL, 'q' },
        { "after", required_argument, NULL, 'a' },
        { "count", required_argument, NULL, 'n' },
        { "us",    required_argument, NULL, 'u' },
        { NULL, 0, NULL, 0 }
    };
    struct softib_rule rule;
    char dev[64];
    uint64_t value;
    uint32_t id;
    softib_ctl_t *ctl;
    int opt, ret;

    memset(&rule, 0, sizeof(rule));
    rule.kind    = kind;
    rule.dir     = SOFTIB_DIR_TX;
    rule.classes = SOFTIB_CLASS_ALL;
    rule.count   = SOFTIB_FOREVER;

    if ((argc < 1) ||
        (softib_ctl_parse_port(argv[0], dev, sizeof(dev), &rule.port) < 0)) {
        softib_usage(stderr);
        return 2;
    }
    rule.dev = dev;

    optind = 1;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        ret = 0;
        switch (opt) {
        case 'd':
            rule.dir = !strcmp(optarg, "tx") ? SOFTIB_DIR_TX :
                       !strcmp(optarg, "rx") ? SOFTIB_DIR_RX :
                       !strcmp(optarg, "any") ? SOFTIB_DIR_ANY : 0;
            ret = rule.dir ? 0 : -EINVAL;
            break;
        case 'c':
            ret = softib_parse_classes(optarg, &rule.classes);
            break;
        case 'q':
            ret = softib_parse_u64(optarg, &value);
            rule.qpn = (uint32_t)value;
            break;
        case 'a':
            ret = softib_parse_u64(optarg, &rule.skip);
            break;
        case 'n':
            ret = softib_parse_u64(optarg, &rule.count);
            break;
        case 'u':
            ret = softib_parse_u64(optarg, &rule.delay_us);
            break;
        default:
            ret = -EINVAL;
            break;
        }
        if (ret < 0) {
            softib_usage(stderr);
            return 2;
        }
    }
    if ((optind != argc) || ((kind == SOFTIB_RULE_DELAY) && !rule.delay_us)) {
        softib_usage(stderr);
        return 2;
    }

    if (softib_open(&ctl) < 0) {
        return 1;
    }
    ret = softib_ctl_rule_add(ctl, &rule, &id);
    softib_ctl_close(ctl);
    if (ret < 0) {
        fprintf(stderr, "softib: cannot add the rule: %s\n", strerror(-ret));
        return 1;
    }
    printf("%u\n", id);
    return 0;
}

static int softib_cmd_undo(int argc, char **argv)
{
    softib_ctl_t *ctl;
    uint64_t id;
    int ret;

    if ((argc != 1) || (softib_parse_u64(argv[0], &id) < 0)) {
        softib_usage(stderr);
        return 2;
    }
    if (softib_open(&ctl) < 0) {
        return 1;
    }
    ret = softib_ctl_rule_del(ctl, (uint32_t)id);
    softib_ctl_close(ctl);
    if (ret < 0) {
        fprintf(stderr, "softib: rule %s: %s\n", argv[0], strerror(-ret));
        return 1;
    }
    return 0;
}

static int softib_cmd_simple(const char *cmd)
{
    softib_ctl_t *ctl;
    int ret;

    if (softib_open(&ctl) < 0) {
        return 1;
    }
    ret = !strcmp(cmd, "reset") ? softib_ctl_reset(ctl) :
                                  softib_devnodes(ctl, 1);
    softib_ctl_close(ctl);
    if (ret < 0) {
        fprintf(stderr, "softib: %s: %s\n", cmd, strerror(-ret));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *cmd;

    if (argc < 2) {
        softib_usage(stderr);
        return 2;
    }
    cmd = argv[1];

    if (!strcmp(cmd, "run")) {
        return softib_cmd_run(argc - 2, argv + 2);
    } else if (!strcmp(cmd, "status")) {
        return softib_cmd_status();
    } else if (!strcmp(cmd, "counters")) {
        return softib_cmd_counters(argc - 2, argv + 2);
    } else if (!strcmp(cmd, "link")) {
        return softib_cmd_link(argc - 2, argv + 2);
    } else if (!strcmp(cmd, "drop")) {
        return softib_cmd_rule(SOFTIB_RULE_DROP, argc - 2, argv + 2);
    } else if (!strcmp(cmd, "delay")) {
        return softib_cmd_rule(SOFTIB_RULE_DELAY, argc - 2, argv + 2);
    } else if (!strcmp(cmd, "undo")) {
        return softib_cmd_undo(argc - 2, argv + 2);
    } else if (!strcmp(cmd, "reset") || !strcmp(cmd, "devnodes")) {
        return softib_cmd_simple(cmd);
    } else if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") ||
               !strcmp(cmd, "help")) {
        softib_usage(stdout);
        return 0;
    }

    fprintf(stderr, "softib: unknown command '%s'\n", cmd);
    softib_usage(stderr);
    return 2;
}
