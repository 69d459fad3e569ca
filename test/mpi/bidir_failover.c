/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * bidir_failover: an MPI job with traffic in every direction through a link
 * failure (issue 14). Each iteration, every rank
 *
 *   - does an MPI_Alltoall of a known pattern (pml ucx) and checks every
 *     element it receives;
 *   - does an MPI_Fetch_and_op(+1) on the counter of another rank (never
 *     itself) in a window (osc ucx), followed by MPI_Win_flush.
 *
 * Rank 0 takes the primary link (softib0:1 by default) down through softib's
 * control API (libsoftib) when it reaches the fail iteration, so the
 * failover happens with traffic in flight both ways, on both of Open MPI's
 * UCP workers (pml and osc). With -F FILE it creates FILE instead and goes
 * on: an injector outside the job (contrib/rxe-vm on the real stack) waits
 * for that file and takes the link down while the traffic runs.
 *
 * At the end, each rank checks that its counter equals the number of adds
 * aimed at it (computed, not communicated), and rank 0 gathers every fetch
 * result: those of one target must be exactly 0, 1, ..., adds-1 (each add
 * executed once and its result delivered once), and those of one origin
 * increase. Each rank prints one line, "rank R (pid P): OK: ..." or
 * "rank R (pid P): WRONG: ...", and rank 0 a last line
 * "bidir_failover: OK|WRONG", each also to the file VARUNA_VERDICT_FILE
 * names (src/tools/varuna_verdict.h), where the runners read them.
 * The exit status is 0 only if everything was right.
 *
 * Sizes: -s BYTES per destination of the alltoall (eager by default);
 * -S BYTES makes every 8th iteration use that size instead (rendezvous).
 *
 * -R adds, each iteration, an MPI_Allreduce (its sum checked) and the rest
 * of osc ucx's operations on the same target, before the flush: an
 * MPI_Put of a known value into the origin's slot there, an
 * MPI_Accumulate(MPI_SUM) of it+1 on the target's sum, and an
 * MPI_Compare_and_swap that moves the origin's own chain word there from
 * k to k+1 (k: the origin's earlier swaps on that target, so each must
 * succeed: a swap executed twice, or its result replayed, returns k+1);
 * after the flush an MPI_Get reads the slot back. Every iteration, after
 * the allreduce, each target checks its sum against the accumulates aimed
 * at it so far (a wrong sum names its iteration); at the end it checks its
 * sum and chain words against everything aimed at it.
 */
#include <mpi.h>
#include "softib_link.h"
#include "varuna_verdict.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* where a rank is, for a debugger looking at a hung run */
enum phase {
    PHASE_INIT, PHASE_ALLTOALL, PHASE_FETCH_AND_OP, PHASE_FLUSH,
    PHASE_ALLREDUCE, PHASE_GET, PHASE_CHECK, PHASE_DONE
};
volatile int bf_iteration = -1;
volatile enum phase bf_phase = PHASE_INIT;

static int rank, nranks;

/* -F: how many times the iterations the ranks may run waiting for the
 * fault (an injector starved for 2.7 s on 2 busy cores was seen) */
#define BF_EXTRA 10

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [-i ITERATIONS] [-f FAIL_AT|-1] [-d DEV:PORT] "
            "[-F FILE] [-s BYTES] [-S BYTES] [-w SECONDS] [-R|-A] [-q]\n"
            "  -i  iterations (4000)\n"
            "  -f  iteration at which rank 0 takes the link down "
            "(ITERATIONS/2; -1: never)\n"
            "  -d  the link to take down (softib0:1), or several\n"
            "      (softib0:1,softib1:1: both paths of a lane)\n"
            "  -F  instead of taking a link down, create FILE at the fail "
            "iteration\n      (for a fault injector outside the job, which "
            "creates FILE.applied\n      once the fault is in place; the "
            "ranks go on past ITERATIONS, up to\n      %d times as many, "
            "until it has)\n"
            "  -s  alltoall bytes per destination, a multiple of 8 (8)\n"
            "  -S  every 8th iteration uses this size instead (0: never)\n"
            "  -w  at the failure iteration every rank idles this long, "
            "progressing MPI, then goes on (issue 9: timers of the failed "
            "port)\n"
            "  -R  also an allreduce, a put, an accumulate, a compare-and-"
            "swap and a get\n"
            "      each iteration, all checked\n"
            "  -A  the alltoall only: no window, no one-sided operation (the\n"
            "      pml's endpoints alone)\n"
            "  -q  no progress lines\n", prog, BF_EXTRA);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * Past the last iteration: one more while the fault injector outside the
 * job (-F) has not put the fault in place (FILE.applied), up to capacity,
 * so the fault meets traffic however late a loaded machine runs the
 * injector. Rank 0 decides and every rank follows, so the iterations stay
 * the same everywhere. Not used without -F or a fault.
 */
static int more_for_fault(const char *applied_file, int it, int capacity)
{
    int more = 0;

    if (applied_file[0] == '\0') {
        return 0;
    }
    if (rank == 0) {
        more = (it < capacity) && (access(applied_file, F_OK) != 0);
    }
    MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return more;
}

/* the element j that rank src sends to rank dst in iteration it */
static inline uint64_t pattern(int it, int src, int dst, size_t j)
{
    uint64_t x = ((uint64_t)(unsigned)it << 40) ^
                 ((uint64_t)(unsigned)src << 28) ^
                 ((uint64_t)(unsigned)dst << 16) ^ (uint64_t)j;

    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 29);
}

/* The window of a rank, in 64-bit words: the fetch-and-op counter, the
 * accumulate sum, then per origin its put slot and its swap chain word */
#define WIN_COUNTER     0
#define WIN_SUM         1
#define WIN_SLOT(_r)    (2 + (_r))
#define WIN_CHAIN(_r)   (2 + nranks + (_r))
#define WIN_WORDS       (2 + 2 * nranks)

/* which rank this rank adds to in iteration it: never itself */
static inline int target_of(int r, int it)
{
    return (r + 1 + it % (nranks - 1)) % nranks;
}

static void die_mpi(int ret, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;

    MPI_Error_string(ret, msg, &len);
    printf("rank %d: WRONG: %s failed in iteration %d: %s\n", rank, what,
           bf_iteration, msg);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int iterations = 4000, fail_at = -2, quiet = 0;
    size_t small = 8, large = 0, max_size, size, n, j;
    const char *link = "softib0:1", *fault_file = NULL;
    uint64_t *sbuf, *rbuf, *base, *results, *all_results = NULL;
    uint64_t one = 1, counter, expected, bad_elems = 0;
    int64_t first_bad_it = -1;
    long first_bad_src = -1;
    int *targets, *all_targets = NULL;
    int opt, it, r, ret, t, ok, all_ok, wrong_fetch = 0, rma = 0;
    int alltoall_only = 0;
    int capacity, extra = 0;
    char applied_file[4096] = "";
    uint64_t put_val, got, acc_val, cas_cmp, cas_new, cas_res, red_in;
    uint64_t red_out, red_expected, *cas_count = NULL;
    uint64_t bad_puts = 0, bad_swaps = 0, bad_reduce = 0;
    uint64_t sum = 0, sum_expected = 0, chain, bad_chains = 0;
    uint64_t sum_now, sum_now_expected = 0;
    int64_t bad_sum_it = -1;
    char detail[1024] = "", who[64], fetch_detail[160] = "";
    double start, t_fail = 0, idle = 0, until;
    MPI_Win win;

    while ((opt = getopt(argc, argv, "i:f:d:F:s:S:w:RAqh")) != -1) {
        switch (opt) {
        case 'i': iterations = atoi(optarg); break;
        case 'f': fail_at = atoi(optarg); break;
        case 'd': link = optarg; break;
        case 'F': fault_file = optarg; break;
        case 's': small = strtoul(optarg, NULL, 0); break;
        case 'S': large = strtoul(optarg, NULL, 0); break;
        case 'w': idle = atof(optarg); break;
        case 'R': rma = 1; break;
        case 'A': alltoall_only = 1; break;
        case 'q': quiet = 1; break;
        default:  usage(argv[0]); return opt == 'h' ? 0 : 2;
        }
    }
    if ((iterations < 1) || (small < 8) || (small % 8) || (large % 8) ||
        (rma && alltoall_only)) {
        usage(argv[0]);
        return 2;
    }
    if (fail_at == -2) {
        fail_at = iterations / 2;
    }

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (nranks < 2) {
        if (rank == 0) {
            fprintf(stderr, "bidir_failover: needs at least 2 ranks\n");
        }
        MPI_Finalize();
        return 2;
    }

    /* with a fault injector outside the job, room to go on until the
     * fault is in place (see more_for_fault) */
    capacity = fault_file ? BF_EXTRA * iterations : iterations;
    if (fault_file && (fail_at >= 0) && (fail_at < iterations)) {
        snprintf(applied_file, sizeof(applied_file), "%s.applied",
                 fault_file);
    }

    max_size = (large > small) ? large : small;
    sbuf     = malloc(max_size * nranks);
    rbuf     = malloc(max_size * nranks);
    results  = calloc(capacity, sizeof(*results));
    targets  = calloc(capacity, sizeof(*targets));
    cas_count = calloc(nranks, sizeof(*cas_count));
    if (!sbuf || !rbuf || !results || !targets || !cas_count) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    if (!alltoall_only) {
        ret = MPI_Win_allocate(WIN_WORDS * sizeof(uint64_t), sizeof(uint64_t),
                               MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        if (ret != MPI_SUCCESS) {
            die_mpi(ret, "MPI_Win_allocate");
        }
        MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
        memset(base, 0, WIN_WORDS * sizeof(uint64_t));
        MPI_Win_unlock(rank, win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock_all(0, win);
    }

    if ((rank == 0) && !quiet) {
        char every8th[64] = "", fault[256];

        if (large) {
            snprintf(every8th, sizeof(every8th), " (every 8th: %zu B)",
                     large);
        }
        if (fault_file) {
            snprintf(fault, sizeof(fault), "fault requested through %s",
                     fault_file);
        } else {
            snprintf(fault, sizeof(fault), "link %s down", link);
        }
        printf("bidir_failover: %d ranks, %d iterations, alltoall %zu B per "
               "destination%s, %s at iteration %d\n", nranks, iterations,
               small, every8th, fault, fail_at);
        fflush(stdout);
    }

    start = now_s();
    for (it = 0;; it++) {
        if (it == iterations) {
            if (!more_for_fault(applied_file, it, capacity)) {
                break;
            }
            iterations++;
            extra++;
        }
        bf_iteration = it;

        if ((rank == 0) && (it == fail_at) && fault_file) {
            FILE *f = fopen(fault_file, "w");

            if (!f || (fprintf(f, "%d\n", it) < 0) || fclose(f)) {
                printf("rank 0: WRONG: could not create %s: %s\n",
                       fault_file, strerror(errno));
                fflush(stdout);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            t_fail = now_s();
            if (!quiet) {
                printf("bidir_failover: fault requested at iteration %d "
                       "(%.2f s)\n", it, t_fail - start);
                fflush(stdout);
            }
        } else if ((rank == 0) && (it == fail_at)) {
            if (softib_link_down(link) < 0) {
                printf("rank 0: WRONG: could not take %s down\n", link);
                fflush(stdout);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            t_fail = now_s();
            if (!quiet) {
                printf("bidir_failover: link %s down at iteration %d "
                       "(%.2f s)\n", link, it, t_fail - start);
                fflush(stdout);
            }
        }

        if ((it == fail_at) && (idle > 0)) {
            int flag;

            /* nothing but progress (MPI_Iprobe drives it) while the link
             * stays down: UCX's timers have their chance to fail a
             * connection, which the next iterations would show */
            for (until = now_s() + idle; now_s() < until;) {
                MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
                           MPI_STATUS_IGNORE);
            }
        }

        /* alltoall of the pattern, every element checked */
        size = (large && (it % 8 == 7)) ? large : small;
        n    = size / sizeof(uint64_t);
        for (r = 0; r < nranks; r++) {
            for (j = 0; j < n; j++) {
                sbuf[r * n + j] = pattern(it, rank, r, j);
            }
        }
        memset(rbuf, 0xff, size * nranks);
        bf_phase = PHASE_ALLTOALL;
        ret = MPI_Alltoall(sbuf, (int)size, MPI_BYTE, rbuf, (int)size,
                           MPI_BYTE, MPI_COMM_WORLD);
        if (ret != MPI_SUCCESS) {
            die_mpi(ret, "MPI_Alltoall");
        }
        for (r = 0; r < nranks; r++) {
            for (j = 0; j < n; j++) {
                if (rbuf[r * n + j] != pattern(it, r, rank, j)) {
                    if (bad_elems++ == 0) {
                        first_bad_it  = it;
                        first_bad_src = r;
                    }
                }
            }
        }

        if (alltoall_only) {
            continue;
        }

        /* fetch-add 1 on another rank's counter, then flush */
        t           = target_of(rank, it);
        targets[it] = t;
        bf_phase    = PHASE_FETCH_AND_OP;
        ret = MPI_Fetch_and_op(&one, &results[it], MPI_UINT64_T, t,
                               WIN_COUNTER, MPI_SUM, win);
        if (ret != MPI_SUCCESS) {
            die_mpi(ret, "MPI_Fetch_and_op");
        }
        if (rma) {
            /* a put, an accumulate and a swap on the same target, all
             * in flight with the fetch-and-op until the flush */
            put_val = pattern(it, rank, t, 1);
            acc_val = it + 1;
            cas_cmp = cas_count[t];
            cas_new = cas_cmp + 1;
            ret = MPI_Put(&put_val, 1, MPI_UINT64_T, t, WIN_SLOT(rank), 1,
                          MPI_UINT64_T, win);
            if (ret != MPI_SUCCESS) {
                die_mpi(ret, "MPI_Put");
            }
            ret = MPI_Accumulate(&acc_val, 1, MPI_UINT64_T, t, WIN_SUM, 1,
                                 MPI_UINT64_T, MPI_SUM, win);
            if (ret != MPI_SUCCESS) {
                die_mpi(ret, "MPI_Accumulate");
            }
            ret = MPI_Compare_and_swap(&cas_new, &cas_cmp, &cas_res,
                                       MPI_UINT64_T, t, WIN_CHAIN(rank), win);
            if (ret != MPI_SUCCESS) {
                die_mpi(ret, "MPI_Compare_and_swap");
            }
        }
        bf_phase = PHASE_FLUSH;
        ret = MPI_Win_flush(t, win);
        if (ret != MPI_SUCCESS) {
            die_mpi(ret, "MPI_Win_flush");
        }
        if (!rma) {
            continue;
        }

        cas_count[t]++;
        if (cas_res != cas_cmp) {
            if (bad_swaps++ < 3) {
                printf("rank %d: iteration %d: compare-and-swap on rank %d "
                       "returned %" PRIu64 ", expected %" PRIu64 "\n", rank,
                       it, t, cas_res, cas_cmp);
            }
        }

        /* the put, read back */
        bf_phase = PHASE_GET;
        got      = ~put_val;
        ret = MPI_Get(&got, 1, MPI_UINT64_T, t, WIN_SLOT(rank), 1,
                      MPI_UINT64_T, win);
        if (ret == MPI_SUCCESS) {
            ret = MPI_Win_flush(t, win);
        }
        if (ret != MPI_SUCCESS) {
            die_mpi(ret, "MPI_Get");
        }
        if (got != put_val) {
            if (bad_puts++ < 3) {
                printf("rank %d: iteration %d: read back %" PRIx64 " from "
                       "rank %d, put %" PRIx64 "\n", rank, it, got, t,
                       put_val);
            }
        }

        /* an allreduce: the sum of every rank's value, computed here */
        bf_phase     = PHASE_ALLREDUCE;
        red_in       = pattern(it, rank, 0, 2);
        red_expected = 0;
        for (r = 0; r < nranks; r++) {
            red_expected += pattern(it, r, 0, 2);
        }
        ret = MPI_Allreduce(&red_in, &red_out, 1, MPI_UINT64_T, MPI_SUM,
                            MPI_COMM_WORLD);
        if (ret != MPI_SUCCESS) {
            die_mpi(ret, "MPI_Allreduce");
        }
        if ((red_out != red_expected) && (bad_reduce++ < 3)) {
            printf("rank %d: iteration %d: allreduce gave %" PRIx64
                   ", expected %" PRIx64 "\n", rank, it, red_out,
                   red_expected);
        }

        /* the sum here, at every iteration: each origin flushed its
         * accumulate of this iteration before the allreduce, and none can
         * start the next one before this rank joins the next alltoall. A
         * wrong sum then names the iteration it went wrong in (relative to
         * the fault), not only that it did */
        for (r = 0; r < nranks; r++) {
            if ((r != rank) && (target_of(r, it) == rank)) {
                sum_now_expected += it + 1;
            }
        }
        /* a plain load, not MPI_Win_sync: osc ucx makes that a UCP worker
         * fence, which can put IBV_SEND_FENCE on a READ or atomic, and on
         * the real stack (Linux 6.1 rxe) a retransmission meeting one
         * stops the QP for good (contrib/rxe-vm/README.md); the test is
         * about the failover. The allreduce above ordered the origins'
         * flushed accumulates before this read */
        sum_now = __atomic_load_n(&base[WIN_SUM], __ATOMIC_ACQUIRE);
        if ((sum_now != sum_now_expected) && (bad_sum_it < 0)) {
            bad_sum_it = it;
            printf("rank %d: iteration %d (fault at %d): sum %" PRIu64
                   ", expected %" PRIu64 "\n", rank, it, fail_at, sum_now,
                   sum_now_expected);
            fflush(stdout);
        }
    }

    /* every add is flushed; wait for everyone's, then read our counter */
    bf_phase = PHASE_CHECK;
    MPI_Barrier(MPI_COMM_WORLD);
    counter = 0;
    if (!alltoall_only) {
        ret = MPI_Fetch_and_op(NULL, &counter, MPI_UINT64_T, rank,
                               WIN_COUNTER, MPI_NO_OP, win);
        if (ret == MPI_SUCCESS) {
            ret = MPI_Win_flush(rank, win);
        }
        if (ret != MPI_SUCCESS) {
            die_mpi(ret, "reading the counter");
        }
        MPI_Win_unlock_all(win);
    }

    if (rma) {
        /* the sum and every origin's chain word, against what was aimed at
         * this rank */
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
        sum = base[WIN_SUM];
        for (r = 0; r < nranks; r++) {
            chain = 0;
            for (it = 0; it < iterations; it++) {
                if ((r != rank) && (target_of(r, it) == rank)) {
                    sum_expected += it + 1;
                    chain++;
                }
            }
            if (base[WIN_CHAIN(r)] != chain) {
                if (bad_chains++ < 3) {
                    printf("rank %d: the swap chain of rank %d is at %" PRIu64
                           " after %" PRIu64 " swaps\n", rank, r,
                           base[WIN_CHAIN(r)], chain);
                }
            }
        }
        MPI_Win_unlock(rank, win);
    }

    expected = 0;
    for (r = 0; r < nranks && !alltoall_only; r++) {
        for (it = 0; it < iterations; it++) {
            expected += (r != rank) && (target_of(r, it) == rank);
        }
    }

    /* rank 0 checks the fetch results of every target */
    if (rank == 0) {
        all_results = malloc(sizeof(uint64_t) * iterations * nranks);
        all_targets = malloc(sizeof(int) * iterations * nranks);
        if (!all_results || !all_targets) {
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    MPI_Gather(results, iterations, MPI_UINT64_T, all_results, iterations,
               MPI_UINT64_T, 0, MPI_COMM_WORLD);
    MPI_Gather(targets, iterations, MPI_INT, all_targets, iterations,
               MPI_INT, 0, MPI_COMM_WORLD);

    /* per origin: the results from one target increase */
    for (it = 0; (it < iterations) && !alltoall_only; it++) {
        for (j = it + 1; j < (size_t)iterations; j++) {
            if (targets[j] == targets[it]) {
                if (results[j] <= results[it]) {
                    wrong_fetch++;
                }
                break;
            }
        }
    }

    ok = (bad_elems == 0) && (counter == expected) && (wrong_fetch == 0) &&
         (sum == sum_expected) && (bad_sum_it < 0) && !bad_puts &&
         !bad_swaps && !bad_reduce && !bad_chains;
    snprintf(detail, sizeof(detail),
             "counter %" PRIu64 " after %" PRIu64 " adds aimed at it%s, "
             "alltoall %d iterations, %" PRIu64 " bad elements",
             counter, expected,
             (counter > expected) ? " (EXECUTED TWICE)" :
             (counter < expected) ? " (LOST)" : "",
             iterations, bad_elems);
    if (bad_elems) {
        snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail),
                 " (first: iteration %" PRId64 " from rank %ld)",
                 first_bad_it, first_bad_src);
    }
    if (wrong_fetch) {
        snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail),
                 ", %d fetch results not increasing", wrong_fetch);
    }
    if (rma) {
        snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail),
                 "; sum %" PRIu64 " of %" PRIu64 "%s, %" PRIu64 " puts read "
                 "back wrong, %" PRIu64 " swaps wrong, %" PRIu64 " chains "
                 "wrong, %" PRIu64 " allreduces wrong", sum, sum_expected,
                 (sum > sum_expected) ? " (EXECUTED TWICE)" :
                 (sum < sum_expected) ? " (LOST)" : "",
                 bad_puts, bad_swaps, bad_chains, bad_reduce);
        if (bad_sum_it >= 0) {
            snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail),
                     " (the sum first wrong at iteration %" PRId64 ")",
                     bad_sum_it);
        }
    }
    bf_phase = PHASE_DONE;
    /* to the verdict file too: stdout is a pipe shared by every rank, and
     * a line cut by a flush of UCX's log came out in two pieces with
     * another rank's output between them (varuna_verdict.h) */
    snprintf(who, sizeof(who), "rank %d (pid %d)", rank, (int)getpid());
    varuna_verdict(who, ok, "%s", detail);

    /* the results of each target must be exactly 0 .. adds-1 */
    if ((rank == 0) && !alltoall_only) {
        uint64_t *v = malloc(sizeof(uint64_t) * iterations * nranks);
        uint64_t k, cnt, dup = 0, gap = 0;

        for (t = 0; t < nranks; t++) {
            cnt = 0;
            for (r = 0; r < nranks; r++) {
                for (it = 0; it < iterations; it++) {
                    if (all_targets[r * iterations + it] == t) {
                        v[cnt++] = all_results[r * iterations + it];
                    }
                }
            }
            qsort(v, cnt, sizeof(*v), cmp_u64);
            for (k = 0; k < cnt; k++) {
                if (v[k] != k) {
                    if ((k > 0) && (v[k] == v[k - 1])) {
                        dup++;
                    } else {
                        gap++;
                    }
                    if (wrong_fetch++ < 3) {
                        printf("rank 0: fetch results on rank %d: the %" PRIu64
                               "th smallest is %" PRIu64 "\n", t, k, v[k]);
                    }
                    break;
                }
            }
        }
        free(v);
        if (dup || gap) {
            snprintf(fetch_detail, sizeof(fetch_detail), "; fetch results "
                     "not 0..adds-1 on %" PRIu64 " ranks (%" PRIu64 " with "
                     "a duplicate)", dup + gap, dup);
            ok = 0;
        }
    }

    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0) {
        if (extra > 0) {
            printf("bidir_failover: %d iterations more than asked, until the "
                   "fault was in place\n", extra);
        }
        varuna_verdict("bidir_failover", all_ok,
                       "%d ranks, %d iterations in %.2f s%s%s", nranks,
                       iterations, now_s() - start,
                       (fail_at >= 0) && (fail_at < iterations) ?
                       ", link failure included" : ", no link failure",
                       fetch_detail);
    }

    if (!alltoall_only) {
        MPI_Win_free(&win);
    }
    free(sbuf);
    free(rbuf);
    free(results);
    free(targets);
    free(cas_count);
    free(all_results);
    free(all_targets);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
