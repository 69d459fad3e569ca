/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

/*
 * Memory registration cost of one UCT memory domain, for contrib/bench:
 * rc_varuna registers every region on both devices of its pair when the
 * standby is another device (DESIGN.md section 3.1), rc_verbs on one.
 *
 * Usage: bench-mreg COMPONENT MD_PREFIX ITERS SIZE...
 *   e.g. bench-mreg ib softib0 200 4096 65536 1048576
 *        bench-mreg rc_varuna softib0 200 4096 65536 1048576
 * Opens the first memory domain of COMPONENT whose name starts with
 * MD_PREFIX, with the configuration of the environment (UCX_IB_REG_METHODS,
 * UCX_RC_VARUNA_STANDBY, ...). For each size it prints one line:
 *   SIZE REG_US DEREG_US REREG_US MD_NAME
 * the median over ITERS of:
 *   REG_US    uct_md_mem_reg() of a region just mapped (never registered);
 *   DEREG_US  uct_md_mem_dereg() of it;
 *   REREG_US  uct_md_mem_reg() + uct_md_mem_dereg() of one region again and
 *             again (what a registration cache, if the domain has one,
 *             answers without registering).
 * Every page is touched before it is registered, as a sender's buffer is.
 */

#include <uct/api/uct.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>


static int bench_mreg_cmp(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

static double bench_mreg_median(double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), bench_mreg_cmp);
    return (n % 2) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double bench_mreg_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void *bench_mreg_map(size_t size)
{
    void *buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (buf == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    memset(buf, 0x5a, size);
    return buf;
}

static void bench_mreg_check(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        fprintf(stderr, "bench-mreg: %s: %s\n", what,
                ucs_status_string(status));
        exit(1);
    }
}

/* The first memory domain of the component whose name starts with prefix */
static uct_md_h bench_mreg_open(const char *comp_name, const char *prefix,
                                char *md_name, size_t max)
{
    uct_component_attr_t attr = {};
    uct_component_h *comps;
    uct_md_config_t *config;
    unsigned i, j, num_comps;
    uct_md_h md;

    bench_mreg_check(uct_query_components(&comps, &num_comps),
                     "uct_query_components");
    for (i = 0; i < num_comps; i++) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                          UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        bench_mreg_check(uct_component_query(comps[i], &attr),
                         "uct_component_query");
        if (strcmp(attr.name, comp_name) || (attr.md_resource_count == 0)) {
            continue;
        }

        attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources = calloc(attr.md_resource_count,
                                   sizeof(*attr.md_resources));
        bench_mreg_check(uct_component_query(comps[i], &attr),
                         "uct_component_query");
        for (j = 0; j < attr.md_resource_count; j++) {
            if (strncmp(attr.md_resources[j].md_name, prefix,
                        strlen(prefix))) {
                continue;
            }
            snprintf(md_name, max, "%s", attr.md_resources[j].md_name);
            bench_mreg_check(uct_md_config_read(comps[i], NULL, NULL,
                                                &config),
                             "uct_md_config_read");
            bench_mreg_check(uct_md_open(comps[i], md_name, config, &md),
                             "uct_md_open");
            uct_config_release(config);
            free(attr.md_resources);
            uct_release_component_list(comps);
            return md;
        }
        free(attr.md_resources);
    }

    fprintf(stderr, "bench-mreg: no memory domain %s* of component %s\n",
            prefix, comp_name);
    exit(1);
}

static void bench_mreg_size(uct_md_h md, const char *md_name, size_t size,
                            unsigned iters)
{
    double *reg   = calloc(iters, sizeof(double));
    double *dereg = calloc(iters, sizeof(double));
    double *rereg = calloc(iters, sizeof(double));
    double start;
    uct_mem_h memh;
    unsigned i;
    void *buf;

    for (i = 0; i < iters; i++) {
        buf   = bench_mreg_map(size);
        start = bench_mreg_now_us();
        bench_mreg_check(uct_md_mem_reg(md, buf, size, UCT_MD_MEM_ACCESS_ALL,
                                        &memh), "uct_md_mem_reg");
        reg[i] = bench_mreg_now_us() - start;
        start  = bench_mreg_now_us();
        bench_mreg_check(uct_md_mem_dereg(md, memh), "uct_md_mem_dereg");
        dereg[i] = bench_mreg_now_us() - start;
        munmap(buf, size);
    }

    buf = bench_mreg_map(size);
    for (i = 0; i < iters; i++) {
        start = bench_mreg_now_us();
        bench_mreg_check(uct_md_mem_reg(md, buf, size, UCT_MD_MEM_ACCESS_ALL,
                                        &memh), "uct_md_mem_reg");
        bench_mreg_check(uct_md_mem_dereg(md, memh), "uct_md_mem_dereg");
        rereg[i] = bench_mreg_now_us() - start;
    }
    munmap(buf, size);

    printf("%zu %.3f %.3f %.3f %s\n", size, bench_mreg_median(reg, iters),
           bench_mreg_median(dereg, iters), bench_mreg_median(rereg, iters),
           md_name);
    free(reg);
    free(dereg);
    free(rereg);
}

int main(int argc, char **argv)
{
    char md_name[UCT_MD_NAME_MAX];
    unsigned iters;
    uct_md_h md;
    int i;

    if (argc < 5) {
        fprintf(stderr, "usage: %s COMPONENT MD_PREFIX ITERS SIZE...\n",
                argv[0]);
        return 2;
    }

    iters = (unsigned)strtoul(argv[3], NULL, 0);
    if (iters == 0) {
        iters = 1;
    }
    md = bench_mreg_open(argv[1], argv[2], md_name, sizeof(md_name));
    for (i = 4; i < argc; i++) {
        bench_mreg_size(md, md_name, strtoul(argv[i], NULL, 0), iters);
    }
    uct_md_close(md);
    return 0;
}
