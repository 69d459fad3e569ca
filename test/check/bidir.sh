#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: traffic in both directions through repeated link failures
# (test/bidir/run.sh, issue 14). The first selection is the one that hung
# every run before the fix of the drain (eager messages only, the client
# pausing at each failure so that everything in flight is acknowledged,
# four failures with re-protection in between); the others add rendezvous
# and failures under traffic, the other standby configuration, and blanket
# recovery, which must be caught executing operations twice.
#

set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
run=$RC_VARUNA_ROOT/test/bidir/run.sh
blanket=$RC_VARUNA_ROOT/test/bidir/blanket.sh
status=0

bash "$run" -r 3 -c 4 -p -a "-S 64" -t 60 -n eager-paused || status=1
bash "$run" -r 2 -c 2 -e 3 -t 60 -n mixed || status=1
bash "$run" -r 2 -c 4 -p -a "-S 64" -s same -t 60 -n same-eager-paused ||
    status=1

# blanket recovery resends what was in flight, executed or not: within
# three runs, one must show a duplicate itself (test/bidir/blanket.sh)
bash "$blanket" 3 -c 2 -e 3 -L -t 60 || status=1

echo "bidir: exit $status"
exit $status
