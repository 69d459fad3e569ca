#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: OpenSHMEM (Open MPI's spml ucx) over rc_varuna (issue 13,
# test/mpi/shmem.sh): fetch-adds and puts read back, once clean and with
# the primary link taken down halfway (2 and 4 PEs), every result checked;
# and under blanket recovery, which must come out wrong. About 15 s.
#

set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
run=$(dirname "${BASH_SOURCE[0]}")/../mpi/shmem.sh
status=0

if ! command -v oshrun >/dev/null || ! command -v oshcc >/dev/null; then
    echo "shmem: Open MPI is not installed (openmpi-bin, libopenmpi-dev:" \
         "contrib/quickstart installs them); skipped"
    exit 77
fi

bash "$run" -n 2 --no-fail --name check-n2-clean || status=1
bash "$run" -n 2 --name check-n2 || status=1
# busy-polling PEs on two cores: a longer RC timeout keeps the check about
# rc_varuna, not about the scheduler (as test/check/mpi-bidir.sh's 6 ranks)
bash "$run" -n 4 -t 120 -x UCX_RC_VARUNA_TIMEOUT=32ms --name check-n4 ||
    status=1
# blanket recovery sends again messages that arrived long ago (unsignaled,
# their completions not seen); one of an earlier barrier can end the final
# barrier on a PE before the other's last adds arrived, and its counter
# reads short (test/mpi/shmem_failover.c). Not every run: about 1 in 3
# came out right; up to 5 runs, one must come out wrong
rc_varuna_one_of 5 check-n2-blanket bash "$run" -n 2 --recovery blanket \
        --expect wrong ||
    { echo "shmem: blanket recovery came out right 5 times"; status=1; }

echo "shmem: exit $status"
exit $status
