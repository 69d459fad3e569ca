/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

/*
 * OpenSHMEM through a link failure (issue 13), over Open MPI's spml ucx.
 * Every iteration each PE, on PE (me + 1) % npes:
 *   - shmem_long_atomic_fetch_add(+1) on a counter, keeping the result;
 *   - shmem_long_put of a known pattern into its own slot there, then
 *     shmem_quiet, and shmem_long_get of it back, checked word by word.
 * PE 0 takes the link down (libsoftib) at iteration FAIL_AT. At the end
 * every counter must equal the iterations (one PE adds to it), and the
 * fetched values of each PE must be exactly 0, 1, ..., iterations - 1 in
 * order: an add executed twice, or lost, shows in both.
 *
 * Usage: shmem_failover [-i ITERATIONS] [-f FAIL_AT|-1] [-d DEV:PORT]
 *                       [-n WORDS]
 * Prints "pe N: OK ..." or "pe N: WRONG ..." per PE, and
 * "shmem_failover: OK" from PE 0 when all are right; exits 1 if not.
 */

#include <shmem.h>
#include "softib_link.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define SF_MAX_WORDS 512

static long sf_counter;
static long sf_slot[SF_MAX_WORDS]; /* written by the PE before us */
static int  sf_wrong_total;

static long pattern(int it, int src, int j)
{
    return ((long)it << 32) ^ ((long)src << 16) ^ j;
}

static void usage(const char *prog)
{
    fprintf(stderr, "usage: %s [-i ITERATIONS] [-f FAIL_AT|-1] [-d DEV:PORT] "
            "[-n WORDS (<= %d)]\n", prog, SF_MAX_WORDS);
    exit(2);
}

int main(int argc, char **argv)
{
    int iterations = 2000, fail_at = -2, words = 64;
    const char *link = "softib0:1";
    long buf[SF_MAX_WORDS], back[SF_MAX_WORDS], counter;
    int me, npes, target, it, j, opt, wrong = 0;
    long *fetched;

    while ((opt = getopt(argc, argv, "i:f:d:n:h")) != -1) {
        switch (opt) {
        case 'i': iterations = atoi(optarg); break;
        case 'f': fail_at = atoi(optarg); break;
        case 'd': link = optarg; break;
        case 'n': words = atoi(optarg); break;
        default: usage(argv[0]);
        }
    }
    if ((iterations <= 0) || (words <= 0) || (words > SF_MAX_WORDS)) {
        usage(argv[0]);
    }
    if (fail_at == -2) {
        fail_at = iterations / 2;
    }

    fetched = calloc(iterations, sizeof(*fetched));
    if (fetched == NULL) {
        perror("calloc");
        return 1;
    }

    shmem_init();
    me     = shmem_my_pe();
    npes   = shmem_n_pes();
    target = (me + 1) % npes;
    if (me == 0) {
        printf("shmem_failover: %d PEs, %d iterations, %d words a put, "
               "link %s down at iteration %d\n", npes, iterations, words,
               link, fail_at);
        fflush(stdout);
    }
    shmem_barrier_all();

    for (it = 0; it < iterations; it++) {
        if ((me == 0) && (it == fail_at)) {
            if (softib_link_down(link) < 0) {
                printf("pe 0: WRONG: could not take %s down\n", link);
                fflush(stdout);
                shmem_global_exit(2);
            }
        }

        fetched[it] = shmem_long_atomic_fetch_add(&sf_counter, 1, target);

        for (j = 0; j < words; j++) {
            buf[j] = pattern(it, me, j);
        }
        shmem_long_put(sf_slot, buf, words, target);
        shmem_quiet();
        shmem_long_get(back, sf_slot, words, target);
        for (j = 0; j < words; j++) {
            if (back[j] != buf[j]) {
                if (wrong++ < 5) {
                    printf("pe %d: WRONG: iteration %d word %d read back "
                           "0x%lx, put 0x%lx\n", me, it, j, back[j], buf[j]);
                }
            }
        }
    }

    shmem_barrier_all();
    for (it = 0; it < iterations; it++) {
        if (fetched[it] != it) {
            if (wrong++ < 10) {
                printf("pe %d: WRONG: fetch-add %d returned %ld\n", me, it,
                       fetched[it]);
            }
        }
    }
    /* Read once the final barrier ended, and again after two more: under
     * blanket recovery a barrier message of long ago, delivered again, can
     * end the final barrier on this PE before the last adds of the PE
     * before it were executed here (the atomics are active messages, UCP's
     * amo_am); the later value tells that apart from an add lost. */
    counter = sf_counter;
    shmem_barrier_all();
    shmem_barrier_all();
    if (counter != iterations) {
        printf("pe %d: WRONG: counter %ld after %d adds (%ld two barriers "
               "later)\n", me, counter, iterations, sf_counter);
        wrong++;
    }
    if (wrong == 0) {
        printf("pe %d: OK: counter %ld, fetch results 0..%d in order, %d "
               "puts read back right\n", me, counter, iterations - 1,
               iterations);
    }
    fflush(stdout);

    shmem_int_atomic_add(&sf_wrong_total, wrong, 0);
    shmem_barrier_all();
    if (me == 0) {
        printf("shmem_failover: %s\n", (sf_wrong_total == 0) ? "OK" : "WRONG");
        fflush(stdout);
    }
    if (me == 0) {
        wrong = sf_wrong_total;
    }
    free(fetched);
    shmem_finalize();
    return (wrong == 0) ? 0 : 1;
}
