/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * mpi_bench: OSU-style loops between two ranks, for contrib/mpi-bench to
 * compare transports in one run (issue 13). Rank 0 prints one line per
 * test, "NAME VALUE UNIT":
 *
 *   lat_8        MPI_Send/MPI_Recv ping-pong of 8 B, one-way latency (us)
 *   lat_64k      the same with 64 KiB (rendezvous)
 *   rate_8       windows of 64 MPI_Isend of 8 B, each window acknowledged
 *                by a zero-byte message (messages per second)
 *   bw_64k       the same with 64 KiB (MB/s)
 *   allreduce_8  MPI_Allreduce of one 64-bit word (us)
 *   put_8        MPI_Put of 8 B and MPI_Win_flush (us)
 *   fadd_8       MPI_Fetch_and_op(MPI_SUM) of 8 B and MPI_Win_flush (us)
 *   acc_8        MPI_Accumulate(MPI_SUM) of 8 B and MPI_Win_flush (us)
 *
 * Rank 1 is passive in the one-sided tests (osc ucx). Every result that
 * can be checked is (the ping-pong's data, the counter after the
 * fetch-adds, the sum after the accumulates): a wrong one fails the run.
 * -n scales the iterations (default 1.0); -t NAME runs only that test.
 */
#include <mpi.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WINDOW 64
#define LARGE  65536

static int rank;
static int wrong;
static const char *only; /* -t: the one test to run */

static int selected(const char *name)
{
    return (only == NULL) || !strcmp(only, name);
}

static void check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "mpi_bench: rank %d: WRONG: %s\n", rank, what);
        wrong = 1;
    }
}

static void report(const char *name, double value, const char *unit)
{
    if (rank == 0) {
        printf("%s %.4f %s\n", name, value, unit);
        fflush(stdout);
    }
}

/* one-way latency of a ping-pong of size bytes, us */
static double pingpong(char *buf, int size, int iters)
{
    int peer = 1 - rank, i;
    double start = 0;

    for (i = -iters / 10; i < iters; i++) {
        if (i == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            start = MPI_Wtime();
        }
        if (rank == 0) {
            buf[0] = (char)i;
            MPI_Send(buf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            check(buf[0] == (char)(i + 1), "ping-pong data");
        } else {
            MPI_Recv(buf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            buf[0]++;
            MPI_Send(buf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - start) * 1e6 / iters / 2;
}

/* windows of WINDOW sends of size bytes from rank 0; seconds per message */
static double stream(char *buf, int size, int windows)
{
    MPI_Request req[WINDOW];
    double start = 0;
    int w, k;

    for (w = -windows / 10; w < windows; w++) {
        if (w == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            start = MPI_Wtime();
        }
        for (k = 0; k < WINDOW; k++) {
            if (rank == 0) {
                MPI_Isend(buf, size, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &req[k]);
            } else {
                MPI_Irecv(buf + (size_t)k * size, size, MPI_BYTE, 0, 2,
                          MPI_COMM_WORLD, &req[k]);
            }
        }
        MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
        if (rank == 0) {
            MPI_Recv(NULL, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Send(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - start) / ((double)windows * WINDOW);
}

enum { OP_PUT, OP_FADD, OP_ACC };

/* rank 0 does iters operations of one kind on rank 1's window, each
 * flushed; us per operation */
static double rma(MPI_Win win, uint64_t *base, int op, int iters)
{
    uint64_t one = 1, result = 0, value;
    double start = 0, t = 0;
    int i;

    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    base[0] = 0;
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        for (i = -iters / 10; i < iters; i++) {
            if (i == 0) {
                start = MPI_Wtime();
            }
            value = (uint64_t)i;
            switch (op) {
            case OP_PUT:
                MPI_Put(&value, 1, MPI_UINT64_T, 1, 1, 1, MPI_UINT64_T, win);
                break;
            case OP_FADD:
                MPI_Fetch_and_op(&one, &result, MPI_UINT64_T, 1, 0, MPI_SUM,
                                 win);
                break;
            default:
                MPI_Accumulate(&one, 1, MPI_UINT64_T, 1, 0, 1, MPI_UINT64_T,
                               MPI_SUM, win);
                break;
            }
            MPI_Win_flush(1, win);
            if (op == OP_FADD) {
                check(result == (uint64_t)(i + iters / 10),
                      "fetch-add result");
            }
        }
        t = (MPI_Wtime() - start) * 1e6 / iters;
        MPI_Win_unlock(1, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
        if (op != OP_PUT) {
            check(base[0] == (uint64_t)(iters + iters / 10),
                  "counter after the fetch-adds or accumulates");
        } else {
            check(base[1] == (uint64_t)(iters - 1), "the last put");
        }
        MPI_Win_unlock(rank, win);
    }
    return t;
}

int main(int argc, char **argv)
{
    double scale = 1.0, t = 0, start = 0;
    int nranks, opt, lat_iters, rate_windows, bw_windows, rma_iters, i;
    uint64_t *base, in, out;
    MPI_Win win;
    char *buf;

    while ((opt = getopt(argc, argv, "n:t:h")) != -1) {
        switch (opt) {
        case 'n': scale = atof(optarg); break;
        case 't': only = optarg; break;
        default:
            fprintf(stderr, "usage: %s [-n SCALE] [-t TEST]\n", argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if ((nranks != 2) || (scale <= 0)) {
        if (rank == 0) {
            fprintf(stderr, "mpi_bench: 2 ranks and a positive -n\n");
        }
        MPI_Finalize();
        return 2;
    }

    lat_iters    = (int)(10000 * scale) + 10;
    rate_windows = (int)(1000 * scale) + 10;
    bw_windows   = (int)(100 * scale) + 10;
    rma_iters    = (int)(10000 * scale) + 10;

    buf = calloc(WINDOW, LARGE);
    if (buf == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Win_allocate(2 * sizeof(uint64_t), sizeof(uint64_t), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &base, &win);

    if (selected("lat_8")) {
        report("lat_8", pingpong(buf, 8, lat_iters), "us");
    }
    if (selected("lat_64k")) {
        report("lat_64k", pingpong(buf, LARGE, lat_iters / 10), "us");
    }
    if (selected("rate_8")) {
        report("rate_8", 1.0 / stream(buf, 8, rate_windows), "msg/s");
    }
    if (selected("bw_64k")) {
        report("bw_64k", LARGE / stream(buf, LARGE, bw_windows) / 1e6,
               "MB/s");
    }

    for (i = -lat_iters / 10; selected("allreduce_8") && (i < lat_iters);
         i++) {
        if (i == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            start = MPI_Wtime();
        }
        in = (uint64_t)(i + 2) * (uint64_t)(rank + 1);
        MPI_Allreduce(&in, &out, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        check(out == (uint64_t)(i + 2) * 3, "allreduce sum");
        if (i == lat_iters - 1) {
            t = (MPI_Wtime() - start) * 1e6 / lat_iters;
        }
    }
    if (selected("allreduce_8")) {
        report("allreduce_8", t, "us");
    }
    if (selected("put_8")) {
        report("put_8", rma(win, base, OP_PUT, rma_iters), "us");
    }
    if (selected("fadd_8")) {
        report("fadd_8", rma(win, base, OP_FADD, rma_iters), "us");
    }
    if (selected("acc_8")) {
        report("acc_8", rma(win, base, OP_ACC, rma_iters), "us");
    }

    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi_bench: %s\n", wrong ? "WRONG" : "OK");
    }
    MPI_Win_free(&win);
    free(buf);
    MPI_Finalize();
    return wrong ? 1 : 0;
}
