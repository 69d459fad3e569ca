#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: Debian's Open MPI over rc_varuna through a link failure
# (test/mpi/run.sh, issue 14): verified MPI_Alltoall and fetch-and-op with
# flush, both directions, on both of Open MPI's UCP workers. A few runs
# (about 1 minute): 2 ranks with eager messages, 2 ranks with rendezvous
# every 8th iteration (in both standby configurations), 6 ranks, and a
# clean run; every one must be OK (no WRONG, no HANG). The long version
# (50 + 50 runs) is in README.md, "Tests".
#

set -uo pipefail
run=$(dirname "${BASH_SOURCE[0]}")/../mpi/run.sh
status=0

if ! command -v mpirun >/dev/null || ! command -v mpicc >/dev/null; then
    echo "mpi-bidir: Open MPI is not installed (openmpi-bin," \
         "libopenmpi-dev: contrib/quickstart installs them); skipped"
    exit 77
fi

bash "$run" -n 2 -r 5 -t 60 --bt --name check-n2 || status=1
bash "$run" -n 2 -r 3 -S 65536 -t 60 --bt --name check-n2-rndv || status=1
bash "$run" -n 2 -r 2 -S 65536 --standby same -t 60 --bt \
    --name check-n2-rndv-same || status=1
# six busy-polling ranks on two cores: softib acknowledges only while the
# receiving rank runs, and a rank off the CPU for 8 ms x 6 makes a healthy
# lane give up (README, Known problems); a longer RC timeout keeps the
# check about rc_varuna, not about the scheduler
bash "$run" -n 6 -r 2 -t 120 --bt -x UCX_RC_VARUNA_TIMEOUT=32ms \
    --name check-n6 || status=1
bash "$run" -n 2 -r 1 --no-fail -t 60 --name check-n2-clean || status=1

echo "mpi-bidir: exit $status"
exit $status
