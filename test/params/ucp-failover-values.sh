#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# Every UCX_UCP_FAILOVER_* parameter fed its bad values. libucp reads them
# when it loads (src/ucp/failover/ucp_failover.c), so any UCP program shows
# the outcome; ucx_info is the cheapest. A bad value must give one clear
# error naming the parameter (the value and the valid range where there is
# one) and say the lane failover is off; a good value no error at all.
# rc_varuna's own parameters have their table in the gtest case
# test_rc_varuna.bad_config_values (checked at interface open).
#
# Usage: test/params/ucp-failover-values.sh   (RC_VARUNA_PREFIX: the prefix;
# by default build/prefix). make check runs it:
# test/check/ucp-failover-config.sh.
#

set -uo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
prefix=$RC_VARUNA_PREFIX
info=$prefix/bin/ucx_info

[[ -x $info ]] || rc_varuna_skip "$info is missing: build first"
export LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export UCX_WARN_UNUSED_ENV_VARS=n

off="the lane failover is off"
parse="cannot be parsed (above): $off"
# setting | what the error output must contain (empty: no error at all)
cases=(
    "UCX_UCP_FAILOVER_TIMEOUT=0|UCX_UCP_FAILOVER_TIMEOUT=0s is out of range (0.001s to 3600s): $off"
    "UCX_UCP_FAILOVER_TIMEOUT=100us|UCX_UCP_FAILOVER_TIMEOUT=0.0001s is out of range (0.001s to 3600s): $off"
    "UCX_UCP_FAILOVER_TIMEOUT=7200s|UCX_UCP_FAILOVER_TIMEOUT=7200s is out of range (0.001s to 3600s): $off"
    "UCX_UCP_FAILOVER_TIMEOUT=-1s|UCX_UCP_FAILOVER_TIMEOUT=-1s is out of range (0.001s to 3600s): $off"
    "UCX_UCP_FAILOVER_TIMEOUT=soon|Invalid value for TIMEOUT: 'soon'"
    "UCX_UCP_FAILOVER_TIMEOUT=2h|Invalid value for TIMEOUT: '2h'"
    "UCX_UCP_FAILOVER_ENABLE=maybe|Invalid value for ENABLE: 'maybe'"
    "UCX_UCP_FAILOVER_SPARE_LANE=2|Invalid value for SPARE_LANE: '2'"
    "UCX_UCP_FAILOVER_REBUILD_INTERVAL=100us|UCX_UCP_FAILOVER_REBUILD_INTERVAL=0.0001s is out of range (0, or 0.001s to 3600s): $off"
    "UCX_UCP_FAILOVER_REBUILD_INTERVAL=2h|Invalid value for REBUILD_INTERVAL: '2h'"
    "UCX_UCP_FAILOVER_REPORT=/nonexistent/x.json|UCX_UCP_FAILOVER_REPORT=/nonexistent/x.json cannot be written (No such file or directory): $off"
    "UCX_UCP_FAILOVER_TIMEOUT=5s|"
    "UCX_UCP_FAILOVER_ENABLE=n|"
    "UCX_UCP_FAILOVER_SPARE_LANE=n|"
    "UCX_UCP_FAILOVER_REBUILD_INTERVAL=0|"
    "UCX_UCP_FAILOVER_REBUILD_INTERVAL=50ms|"
    "UCX_UCP_FAILOVER_REPORT=${TMPDIR:-/tmp}/ucp-failover-config.$$.json|"
)

rc_varuna_at_exit 'rm -f "${TMPDIR:-/tmp}/ucp-failover-config.$$.json"'
fail=0
for c in "${cases[@]}"; do
    setting=${c%%|*}
    want=${c#*|}
    # UCX logs to stdout; only its lines count
    out=$(env "$setting" "$info" -v 2>&1 | grep "UCX  ")
    errors=$(grep -c 'UCX  ERROR' <<<"$out")
    if [[ -z $want ]]; then
        if [[ $errors -ne 0 ]]; then
            echo "FAIL: $setting: an error for a good value:"
            sed 's/^/    /' <<<"$out"
            fail=1
        else
            echo "ok: $setting: accepted"
        fi
        continue
    fi
    if ! grep -qF -- "$want" <<<"$out"; then
        echo "FAIL: $setting: no error saying \"$want\"; got:"
        sed 's/^/    /' <<<"${out:-(nothing)}"
        fail=1
    elif [[ $want == Invalid* ]] && ! grep -qF -- "$parse" <<<"$out"; then
        echo "FAIL: $setting: the parser's error, but not \"$parse\""
        fail=1
    elif [[ $errors -gt 2 ]]; then
        echo "FAIL: $setting: $errors error lines (one, and the parser's)"
        fail=1
    else
        echo "ok: $setting: $(grep 'UCX  ERROR' <<<"$out" | tail -n 1 |
                               sed 's/.*UCX  ERROR //')"
    fi
done
[[ $fail -eq 0 ]] && echo "PASS: ${#cases[@]} settings" || echo "FAIL"
exit $fail
