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
 * PE 0 takes the link down (libsoftib) at iteration FAIL_AT; with -L MS,
 * the link first loses every response for MS milliseconds (what is sent
 * meanwhile executes unconfirmed: blanket recovery sends it again). At the end
 * every counter must equal the iterations (one PE adds to it), and the
 * fetched values of each PE must be exactly 0, 1, ..., iterations - 1 in
 * order: an add executed twice, or lost, shows in both. Every
 * SF_CHECK_EVERY iterations a barrier, after which the counter must equal
 * the iterations so far: a barrier that ends before the adds ahead of it
 * are all in was ended by a message of an earlier barrier delivered again
 * (blanket recovery's duplicate; an add lost would also leave the final
 * counter short, while here it comes out right).
 *
 * With -F FILE (a fault put in place from outside, as on the real stack in
 * the rxe VM), PE 0 creates FILE at FAIL_AT instead and waits (up to
 * SF_FAULT_WAIT_S) for FILE.applied before its next operation; the other
 * PEs go on meanwhile, their operations to PE 0 in flight when it comes.
 * With -G FAIL2_AT as well, PE 0 asks for a second fault the same way at
 * FAIL2_AT (FILE.2, FILE.2.applied), progressing meanwhile: whoever puts
 * it in place may wait for the first one's lane to be connected again,
 * which needs both sides' progress (a full cycle).
 *
 * Usage: shmem_failover [-i ITERATIONS] [-f FAIL_AT|-1] [-d DEV:PORT]
 *                       [-n WORDS] [-L MS] [-F FILE [-G FAIL2_AT]]
 * Prints "pe N: OK: ..." or "pe N: WRONG: ..." per PE, and
 * "shmem_failover: OK" from PE 0 when all are right, each also to the file
 * VARUNA_VERDICT_FILE names (src/tools/varuna_verdict.h), where the
 * runners read them; exits 1 if not.
 */

#include <shmem.h>
#include "softib_link.h"
#include "varuna_verdict.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SF_MAX_WORDS    512
#define SF_CHECK_EVERY  100
#define SF_FAULT_WAIT_S 60

static long sf_counter;
static long sf_slot[SF_MAX_WORDS]; /* written by the PE before us */
static int  sf_wrong_total;

static long pattern(int it, int src, int j)
{
    return ((long)it << 32) ^ ((long)src << 16) ^ j;
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* PE 0 at iteration it: the fault, in one or two steps; 1 once the link
 * is down */
static int sf_fault(const char *link, int it, int fail_at, int loss_ms)
{
    static double t_loss = -1;

    if (it < fail_at) {
        return 0;
    }
    if ((loss_ms > 0) && (t_loss < 0)) {
        if (softib_responses_lost(link) < 0) {
            printf("pe 0: WRONG: could not make %s lose responses\n", link);
            fflush(stdout);
            shmem_global_exit(2);
        }
        t_loss = now_ms();
    }
    if ((loss_ms > 0) && (now_ms() - t_loss < loss_ms)) {
        return 0;
    }
    if (softib_link_down(link) < 0) {
        printf("pe 0: WRONG: could not take %s down\n", link);
        fflush(stdout);
        shmem_global_exit(2);
    }
    return 1;
}

/* -F: PE 0 asks for the fault and waits until it is in place (progress:
 * and progresses its worker meanwhile) */
static void sf_fault_outside(const char *fault_file, int progress)
{
    char applied[4096];
    double t0 = now_ms();
    FILE *f;

    snprintf(applied, sizeof(applied), "%s.applied", fault_file);
    f = fopen(fault_file, "w");
    if (f == NULL) {
        printf("pe 0: WRONG: cannot create %s\n", fault_file);
        fflush(stdout);
        shmem_global_exit(2);
    }
    fclose(f);
    while (access(applied, F_OK) != 0) {
        if (now_ms() - t0 > SF_FAULT_WAIT_S * 1e3) {
            printf("pe 0: WRONG: no fault in place after %d s\n",
                   SF_FAULT_WAIT_S);
            fflush(stdout);
            shmem_global_exit(2);
        }
        if (progress) {
            /* a blocking read of the counter of the PE after us: UCP
             * progresses until it is back (shmem_quiet with nothing
             * outstanding returns without progress) */
            (void)shmem_long_atomic_fetch(&sf_counter, 1 % shmem_n_pes());
        }
        usleep(1000);
    }
}

static void usage(const char *prog)
{
    fprintf(stderr, "usage: %s [-i ITERATIONS] [-f FAIL_AT|-1] [-d DEV:PORT] "
            "[-n WORDS (<= %d)] [-L MS] [-F FILE [-G FAIL2_AT]]\n", prog,
            SF_MAX_WORDS);
    exit(2);
}

int main(int argc, char **argv)
{
    int iterations = 2000, fail_at = -2, words = 64, loss_ms = 0, down = 0;
    int fail2_at = -1;
    const char *link = "softib0:1", *fault_file = NULL;
    char fault2_file[4096];
    long buf[SF_MAX_WORDS], back[SF_MAX_WORDS], counter;
    int me, npes, target, it, j, opt, wrong = 0, early = 0, first_early = -1;
    long early_counter = 0;
    long *fetched;
    char detail[1024], who[32];
    int bad_reads;

    while ((opt = getopt(argc, argv, "i:f:d:n:L:F:G:h")) != -1) {
        switch (opt) {
        case 'i': iterations = atoi(optarg); break;
        case 'f': fail_at = atoi(optarg); break;
        case 'd': link = optarg; break;
        case 'n': words = atoi(optarg); break;
        case 'L': loss_ms = atoi(optarg); break;
        case 'F': fault_file = optarg; break;
        case 'G': fail2_at = atoi(optarg); break;
        default: usage(argv[0]);
        }
    }
    if ((iterations <= 0) || (words <= 0) || (words > SF_MAX_WORDS)) {
        usage(argv[0]);
    }
    if (fail_at == -2) {
        fail_at = iterations / 2;
    }
    if ((fail2_at >= 0) && ((fault_file == NULL) || (fail2_at <= fail_at))) {
        usage(argv[0]); /* -G: from outside, after the first */
    }
    if (fault_file != NULL) {
        snprintf(fault2_file, sizeof(fault2_file), "%s.2", fault_file);
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
               "%s%s down at iteration %d", npes, iterations, words,
               fault_file ? "a fault from outside, " : "link ",
               fault_file ? fault_file : link, fail_at);
        if (fail2_at >= 0) {
            printf(", a second (%s) at iteration %d", fault2_file, fail2_at);
        }
        if (loss_ms > 0) {
            printf(", losing every response %d ms before", loss_ms);
        }
        printf("\n");
        fflush(stdout);
    }
    shmem_barrier_all();

    for (it = 0; it < iterations; it++) {
        if ((me == 0) && (fail_at >= 0) && !down) {
            if (fault_file == NULL) {
                down = sf_fault(link, it, fail_at, loss_ms);
            } else if (it >= fail_at) {
                sf_fault_outside(fault_file, 0);
                down = 1;
            }
        }
        if ((me == 0) && (fail2_at >= 0) && (it == fail2_at)) {
            sf_fault_outside(fault2_file, 1);
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

        /* the PE before us made it + 1 adds here, all complete once the
         * barrier ends: fewer means the barrier ended early */
        if (((it + 1) % SF_CHECK_EVERY) == 0) {
            shmem_barrier_all();
            counter = sf_counter;
            if (counter < it + 1) {
                if (early++ == 0) {
                    first_early   = it;
                    early_counter = counter;
                }
            }
            /* a counter above it + 1 proves nothing: the PE before us may
             * have left the barrier first, its next add executed by our
             * progress while we were still in it */
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
    /* one verdict line per PE, also to the verdict file: stdout is a pipe
     * every PE shares, where a line cut by a flush of UCX's log comes out
     * in two pieces with another PE's output between them
     * (varuna_verdict.h) */
    bad_reads = wrong;
    detail[0] = '\0';
    if (counter != iterations) {
        snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail),
                 "%scounter %ld after %d adds (%ld two barriers later)%s",
                 detail[0] ? "; " : "", counter, iterations, sf_counter,
                 (sf_counter > iterations) ? " (EXECUTED TWICE)" : "");
        wrong++;
    }
    if (bad_reads > 0) {
        snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail),
                 "%s%d words read back or fetch results wrong (the first "
                 "above)", detail[0] ? "; " : "", bad_reads);
    }
    if (early > 0) {
        snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail),
                 "%s%d barriers ended early (the first after iteration %d, "
                 "counter %ld of %d), counter %ld in the end",
                 detail[0] ? "; " : "", early, first_early, early_counter,
                 first_early + 1, sf_counter);
        wrong++;
    }
    if (wrong == 0) {
        snprintf(detail, sizeof(detail), "counter %ld, fetch results 0..%d "
                 "in order, %d puts read back right", counter,
                 iterations - 1, iterations);
    }
    snprintf(who, sizeof(who), "pe %d", me);
    varuna_verdict(who, wrong == 0, "%s", detail);

    shmem_int_atomic_add(&sf_wrong_total, wrong, 0);
    shmem_barrier_all();
    if (me == 0) {
        varuna_verdict("shmem_failover", sf_wrong_total == 0, "%d PEs", npes);
    }
    if (me == 0) {
        wrong = sf_wrong_total;
    }
    free(fetched);
    shmem_finalize();
    return (wrong == 0) ? 0 : 1;
}
