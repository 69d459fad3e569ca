#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: OpenSHMEM (Open MPI's spml ucx) over rc_varuna (issue 13,
# test/mpi/shmem.sh): fetch-adds and puts read back, once clean and with
# the primary link taken down halfway (2 and 4 PEs; with responses lost
# 30 ms before; both paths of the lane), every result checked; and under
# blanket recovery, which must show a message delivered again. About 20 s.
#

set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
run=$(dirname "${BASH_SOURCE[0]}")/../mpi/shmem.sh
status=0

command -v oshrun >/dev/null && command -v oshcc >/dev/null ||
    rc_varuna_skip "shmem: Open MPI is not installed (openmpi-bin," \
                   "libopenmpi-dev: contrib/quickstart installs them)"

bash "$run" -n 2 --no-fail --name check-n2-clean || status=1
bash "$run" -n 2 --name check-n2 || status=1
# busy-polling PEs on two cores: a longer RC timeout keeps the check about
# rc_varuna, not about the scheduler (as test/check/mpi-bidir.sh's 6 ranks)
bash "$run" -n 4 -t 120 -x UCX_RC_VARUNA_TIMEOUT=32ms --name check-n4 ||
    status=1
# both paths of the lane die, two ports each side: the spare lane takes
# over (issue 32)
bash "$run" -n 2 --double --name check-n2-double || status=1
bash "$run" -n 4 --double -t 120 -x UCX_RC_VARUNA_TIMEOUT=32ms \
    --name check-n4-double || status=1
# the link loses every response for 30 ms before it goes down: what was
# sent meanwhile executed unconfirmed, and each is recovered once
bash "$run" -n 2 -L 30 --name check-n2-L30 || status=1
# blanket recovery sends it again: one run must show a message delivered
# again (an add executed twice, UCP's assertion on a second reply, a
# barrier ended early with no add lost), not just fail
bash "$run" -n 2 -L 30 --recovery blanket --expect again \
        --name check-n2-blanket ||
    { echo "shmem: blanket recovery delivered nothing again"; status=1; }

echo "shmem: exit $status"
exit $status
