#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: Debian's Open MPI over rc_varuna through a link failure
# (test/mpi/run.sh, issues 13 and 14): verified MPI_Alltoall and
# fetch-and-op with flush, both directions, on both of Open MPI's UCP
# workers; in the 2-rank runs in the default standby configuration also
# MPI_Allreduce, MPI_Put, MPI_Accumulate, MPI_Compare_and_swap and MPI_Get
# (--rma). A few runs
# (about 1 minute): 2 ranks with eager messages, 2 ranks with rendezvous
# every 8th iteration (in both standby configurations), 6 ranks, a clean
# run, and double failures (2 and 4 ranks; every path dead must end the
# job, not hang); every one must be OK (no WRONG, no HANG). Then blanket
# recovery, which must come out wrong. The long version (50 + 50 runs) is
# in docs/testing.md, "Two-process tests".
#

set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
run=$(dirname "${BASH_SOURCE[0]}")/../mpi/run.sh
status=0

command -v mpirun >/dev/null && command -v mpicc >/dev/null ||
    rc_varuna_skip "mpi-bidir: Open MPI is not installed (openmpi-bin," \
                   "libopenmpi-dev: contrib/quickstart installs them)"

bash "$run" -n 2 -r 5 -t 60 --bt --rma --name check-n2 || status=1
bash "$run" -n 2 -r 3 -S 65536 -t 60 --bt --rma --name check-n2-rndv ||
    status=1
bash "$run" -n 2 -r 2 -S 65536 --standby same -t 60 --bt \
    --name check-n2-rndv-same || status=1
# six busy-polling ranks on two cores: softib acknowledges only while the
# receiving rank runs, and a rank off the CPU for 8 ms x 6 makes a healthy
# lane give up (docs/rc_varuna.7.md, TROUBLESHOOTING); a longer RC timeout keeps the
# check about rc_varuna, not about the scheduler
bash "$run" -n 6 -r 2 -t 120 --bt -x UCX_RC_VARUNA_TIMEOUT=32ms \
    --name check-n6 || status=1
bash "$run" -n 2 -r 1 --no-fail -S 65536 -t 60 --rma --name check-n2-clean ||
    status=1
# a double failure (both paths of a lane, the other port pair alive): UCP's
# lane failover moves the lane, in Open MPI's endpoints without peer error
# handling (issue 35); the alltoall alone (pml ucx's two tag lanes), with
# the window (osc ucx's spare lane), 4 ranks; and every path dead must end
# the job with UCX's error, not hang
bash "$run" -n 2 -r 3 --double --rma -t 60 --bt --name check-n2-double ||
    status=1
bash "$run" -n 2 -r 2 --double --alltoall -t 60 --bt \
    --name check-n2-double-alltoall || status=1
bash "$run" -n 4 -r 2 --double -t 120 --bt --name check-n4-double || status=1
bash "$run" -n 2 -r 1 --all-paths -t 60 --name check-n2-all-paths || status=1
# blanket recovery sends again what executed: one run must show an
# operation executed twice (a counter or sum above what was added, a fetch
# result seen twice, or UCP's assertion on a second reply), not just fail
bash "$run" -n 2 --rma --recovery blanket --expect twice -t 60 \
        --name check-n2-blanket ||
    { echo "mpi-bidir: blanket recovery showed nothing executed twice"
      status=1; }

echo "mpi-bidir: exit $status"
exit $status
