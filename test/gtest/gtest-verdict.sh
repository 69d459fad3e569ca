#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# What a gtest run tested, from its output: the number of tests that ran
# and the ones that skipped. The googletest of UCX 1.13.1 exits 0 when its
# filter matches nothing, and a case that skips (UCS_TEST_SKIP_R) passes:
# a runner that stopped testing anything would still pass. So a run fails
# here when no test ran, and when a test skipped that is not allowed to.
#
# Usage: test/gtest/gtest-verdict.sh LOG [ALLOWED]
#   LOG      gtest's output
#   ALLOWED  an extended regex of the test names (as gtest prints them on
#            its RUN line, e.g. rc_varuna/test_rc_varuna.failover_bench/0)
#            allowed to skip; empty: none
# Prints one line: "gtest-verdict: N tests ran, M skipped[: names]".
# Exit status: 0, or 1 if no test ran or a test skipped that is not allowed.
#

set -uo pipefail

log=${1:?usage: gtest-verdict.sh LOG [ALLOWED]}
allowed=${2:-}

ran=$(sed -n 's/^\[==========\] \([0-9]*\) tests\{0,1\} from .* ran\..*/\1/p' \
      "$log" | tail -n 1)
# UCX's test base prints "[     SKIP ] (reason)" inside the case; the case
# is the last RUN line before it
mapfile -t skipped < <(awk '
    /^\[ RUN      \] / { name = $4 }
    /^\[ *SKIP *\]/    { print name }' "$log" | sort -u)

status=0
line="gtest-verdict: ${ran:-no} tests ran, ${#skipped[@]} skipped"
if ((${#skipped[@]} > 0)); then
    line+=": ${skipped[*]}"
fi
echo "$line"
if [[ -z $ran || $ran -eq 0 ]]; then
    echo "gtest-verdict: FAIL: no test ran (a filter that matches nothing?)"
    status=1
fi
for name in "${skipped[@]}"; do
    if [[ -z $allowed ]] || ! [[ $name =~ ^($allowed)$ ]]; then
        echo "gtest-verdict: FAIL: $name skipped, which it may not here"
        status=1
    fi
done
exit $status
