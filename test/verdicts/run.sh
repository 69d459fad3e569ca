#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# The runners judge a run by each process's verdict line, which
# the process writes in one write(2) to a file of the run
# (src/tools/varuna_verdict.h), and a process whose verdict is missing or
# WRONG fails the run, named. This shows the judging able to fail:
#   - rc_varuna_verdicts (contrib/common.sh) on the output that once failed
#     make check, rank 2's line cut in two on the pipe the ranks share
#     ("ht" ... "(pid 7683): OK: ..."): rank 2 has no verdict;
#   - Open MPI (test/mpi/run.sh, 4 ranks, no fault) with rank 2's verdict
#     left out of the file, then with rank 1 saying WRONG
#     (VARUNA_VERDICT_TEST): the run fails and names that rank;
#   - OpenSHMEM (test/mpi/shmem.sh) with PE 1's verdict left out, and the
#     demo (contrib/demo --loop) with the server's: the same.
# And that a clean run of each passes, so the checks are not always false.
# About 20 s.
#
# Usage: test/verdicts/run.sh   (make check runs it: test/check/verdicts.sh)
#

set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
mpi_run=$RC_VARUNA_ROOT/test/mpi/run.sh
shmem_run=$RC_VARUNA_ROOT/test/mpi/shmem.sh
failures=0

command -v mpirun >/dev/null && command -v oshrun >/dev/null ||
    rc_varuna_skip "verdicts: Open MPI is not installed (openmpi-bin," \
                   "libopenmpi-dev: contrib/quickstart installs them)"

verdicts_fail()
{
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# expect_named WHAT PATTERN STATUS OUTPUT: the run failed (STATUS != 0) and
# its output names the process (a line matching the extended regex PATTERN)
expect_named()
{
    local what=$1 pattern=$2 status=$3 out=$4

    if ((status == 0)); then
        verdicts_fail "$what: the run passed"
    elif ! grep -q -E "$pattern" <<<"$out"; then
        verdicts_fail "$what: the run failed without naming it" \
                      "(/$pattern/ not in its output)"
        tail -n 3 <<<"$out" | sed 's/^/    /'
    else
        echo "ok: $what: $(grep -m1 -o -E "$pattern.{0,60}" <<<"$out")"
    fi
}

# 1. the judging itself, on the output of the run that failed make check
work=$(mktemp -d)
rc_varuna_at_exit 'rm -rf "$work"'
cat >"$work/cut" <<'EOF'
rank 0 (pid 7681): OK: counter 4000 after 4000 adds aimed at it
ht
rank 1 (pid 7682): OK: counter 4000 after 4000 adds aimed at it
ic flowing again 220042.4 us after the failure
(pid 7683): OK: counter 4000 after 4000 adds aimed at it
rank 3 (pid 7684): OK: counter 4000 after 4000 adds aimed at it
bidir_failover: OK: 4 ranks, 4000 iterations in 3.02 s
EOF
out=$(rc_varuna_verdicts "$work/cut" "rank 0" "rank 1" "rank 2" "rank 3" \
      bidir_failover)
expect_named "a verdict cut in two" '^rank 2: no verdict$' $? "$out"
for r in 0 1 2 3; do
    echo "rank $r (pid 768$r): OK: counter 4000 after 4000 adds aimed at it"
done >"$work/whole"
echo 'bidir_failover: OK: 4 ranks, 4000 iterations in 3.02 s' >>"$work/whole"
if out=$(rc_varuna_verdicts "$work/whole" "rank 0" "rank 1" "rank 2" \
         "rank 3" bidir_failover); then
    echo "ok: every verdict whole: passes"
else
    verdicts_fail "every verdict whole: $out"
fi
printf '%s\n' 'rank 1 (pid 5): OK: x' 'rank 1 (pid 5): OK: x' >"$work/twice"
out=$(rc_varuna_verdicts "$work/twice" "rank 1")
expect_named "a rank with two verdicts" '^rank 1: 2 verdicts$' $? "$out"

# 2. whole runs: a verdict missing or WRONG fails the run and is named
out=$(bash "$mpi_run" -n 4 -i 200 --no-fail -t 60 --name verdicts-clean 2>&1)
if (($? == 0)); then
    echo "ok: Open MPI, 4 ranks, every verdict in the file: passes"
else
    verdicts_fail "Open MPI, a clean run: $(tail -n 2 <<<"$out")"
fi
out=$(bash "$mpi_run" -n 4 -i 200 --no-fail -t 60 --name verdicts-skip \
      -x "VARUNA_VERDICT_TEST=skip:rank 2" 2>&1)
expect_named "Open MPI, rank 2's verdict missing" 'rank 2: no verdict' $? \
             "$out"
out=$(bash "$mpi_run" -n 4 -i 200 --no-fail -t 60 --name verdicts-wrong \
      -x "VARUNA_VERDICT_TEST=wrong:rank 1" 2>&1)
expect_named "Open MPI, rank 1 WRONG" 'rank 1 \(pid [0-9]+\): WRONG' $? \
             "$out"
out=$(bash "$shmem_run" -n 2 -i 200 --no-fail --name verdicts-skip \
      -x "VARUNA_VERDICT_TEST=skip:pe 1" 2>&1)
expect_named "OpenSHMEM, PE 1's verdict missing" 'pe 1: no verdict' $? \
             "$out"
out=$(VARUNA_VERDICT_TEST=skip:server \
      "$RC_VARUNA_ROOT/contrib/demo" --loop varuna 1 2>&1)
expect_named "the demo, the server's verdict missing" 'server: no verdict' \
             $? "$out"

if ((failures > 0)); then
    echo "FAIL: $failures checks of the verdicts"
    exit 1
fi
echo "PASS: a verdict missing, cut or WRONG fails its run and is named"
