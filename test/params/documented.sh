#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# The reference page, docs/rc_varuna.7.md, documents exactly the runtime
# parameters the build registers: every UCX_RC_VARUNA_* (rc_varuna's own and
# the RC/IB settings it inherits under its prefix) and every
# UCX_UCP_FAILOVER_* (UCP's lane failover).
#
# Where the names come from: "ucx_info -c -f" of our prefix. It needs no
# UCX_TLS and no device: it prints every configuration table registered in
# the process, with full names. rc_varuna's tables are registered when UCT
# loads libuct_varuna (UCX_MODULES must not leave it out, so it is unset
# here); the lane failover's table (src/ucp/failover/ucp_failover.c) is
# added to UCX's global list by libucp itself at load (UCS_STATIC_INIT),
# and ucx_info links libucp, so it is listed too, although the values are
# read only when a lane fails. Reading ucx_info rather than the sources
# checks what a user sees, inherited names included; an empty family
# (the module not loaded, a libucp without the lane failover) is a failure,
# never a pass.
#
# What counts as documented: a table row of the page's RUNTIME PARAMETERS
# section whose first cell is the name (`UCX_RC_VARUNA_X`, bold or not).
# Any other mention of a name in README.md, CONTRIBUTING.md or docs/*.md
# must be a registered one too (a stale name in prose fails as well;
# NEWS.md, which is history, is not checked).
#
# Usage: test/params/documented.sh   (RC_VARUNA_PREFIX: the prefix; by
# default build/prefix). Exit 0: all documented; 1: a difference (listed);
# 77: no ucx_info in the prefix (not built). make check runs it:
# test/check/doc-params.sh.
#

set -uo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
prefix=$RC_VARUNA_PREFIX
ucx_info=$prefix/bin/ucx_info
doc=$RC_VARUNA_ROOT/docs/rc_varuna.7.md
names='UCX_(RC_VARUNA|UCP_FAILOVER)_[A-Z0-9_]*[A-Z0-9]'

[[ -x $ucx_info ]] ||
    rc_varuna_skip "doc-params: $ucx_info is missing (contrib/quickstart" \
                   "build)"
[[ -f $doc ]] || { echo "FAIL: $doc is missing"; exit 1; }

# Our prefix only, every module it has
export LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset UCX_MODULES UCX_MODULE_DIR

if ! out=$("$ucx_info" -c -f 2>&1); then
    echo "FAIL: $ucx_info -c -f failed:"
    tail -n 20 <<<"$out"
    exit 1
fi
registered=$(grep -oE "^$names=" <<<"$out" | tr -d = | sort -u)

documented=$(awk '/^## /{ in_params = ($0 ~ /^## RUNTIME PARAMETERS/) }
                  in_params && /^\| / { print $2 }' "$doc" |
             tr -d '`*' | grep -E "^$names$" | sort -u)

mentioned=$(cd "$RC_VARUNA_ROOT" &&
            cat README.md CONTRIBUTING.md docs/*.md 2>/dev/null |
            grep -oE "\b$names\b" | sort -u)

status=0
# report LIST WHAT...: a failure when LIST is not empty
report()
{
    local list=$1

    shift
    [[ -z $list ]] && return
    echo "FAIL: $*:"
    sed 's/^/  /' <<<"$list"
    status=1
}

for family in RC_VARUNA UCP_FAILOVER; do
    grep -q "^UCX_${family}_" <<<"$registered" ||
        report "(none)" "ucx_info -c -f lists no UCX_${family}_* (stale or" \
               "broken install in $prefix?)"
done
report "$(comm -23 <(echo "$registered") <(echo "$documented"))" \
       "registered, not documented in docs/rc_varuna.7.md (RUNTIME PARAMETERS)"
report "$(comm -13 <(echo "$registered") <(echo "$documented"))" \
       "documented in docs/rc_varuna.7.md, not registered"
report "$(comm -13 <(echo "$registered") <(echo "$mentioned"))" \
       "named in README.md, CONTRIBUTING.md or docs/, not registered"

if ((status == 0)); then
    echo "PASS: docs/rc_varuna.7.md documents the $(wc -l <<<"$registered")" \
         "parameters ucx_info registers ($(grep -c RC_VARUNA <<<"$registered")" \
         "UCX_RC_VARUNA_*, $(grep -c UCP_FAILOVER <<<"$registered")" \
         "UCX_UCP_FAILOVER_*)"
fi
exit $status
