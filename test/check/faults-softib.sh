#!/bin/bash
# make check: the fault scenarios of contrib/faults on softib, the same code
# that test/check/rxe-vm.sh runs on the real stack (issue 8): both links,
# link 1 down on A's side, one-way loss B to A, 3 fail/heal cycles with
# re-protection, 2 Open MPI runs through a fault, the endpoint after a
# failover with the link kept down (idle 7 s, peer killed), a failover with
# both sides in wakeup mode; about a minute.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../../contrib/faults/run" softib short
