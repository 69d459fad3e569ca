#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# Smoke test of the installed build: ucx_info from our prefix is UCX 1.13.1
# configured by contrib/ucx-build, it loads libuct_varuna from the prefix and
# queries the rc_varuna component, on softib it lists rc_varuna with its
# operations in both standby configurations, and libuct_ib has mlx5 as
# Debian's build has.
# make check runs it from test/check/smoke.sh (RC_VARUNA_PREFIX set there);
# by hand (default build/prefix): test/smoke/ucx-module.sh
#

set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
prefix=$(realpath "$RC_VARUNA_PREFIX")
ucx_info=$prefix/bin/ucx_info

# Only our prefix: its libraries and modules, not another UCX on the system
export LD_LIBRARY_PATH=$prefix/lib
unset UCX_MODULE_DIR UCX_MODULES UCX_TLS

version=$("$ucx_info" -v)
echo "$version"
grep -qx '# Version 1\.13\.1' <<<"$version" ||
    rc_varuna_fail "ucx_info is not UCX 1.13.1"
grep -q "^# Configured with: .*--prefix=$prefix .*--enable-gtest" \
    <<<"$version" ||
    rc_varuna_fail "ucx_info was not configured by contrib/ucx-build"
rc_varuna_pass "ucx_info -v: UCX 1.13.1 configured by contrib/ucx-build"

log=$(UCX_MODULE_LOG_LEVEL=debug UCX_LOG_LEVEL=debug "$ucx_info" -d 2>&1)
grep -E "loaded $prefix/lib/ucx/libuct_varuna\.so" <<<"$log" ||
    rc_varuna_fail "ucx_info -d did not load $prefix/lib/ucx/libuct_varuna.so"
rc_varuna_pass "ucx_info -d loads libuct_varuna from the prefix"

# Without an RDMA device the component is still queried: it says so
grep -E "rc_varuna_md\.c.*rc_varuna: " <<<"$log" ||
    rc_varuna_fail "ucx_info -d did not query the rc_varuna component"
rc_varuna_pass "ucx_info -d queries the rc_varuna component"

# On softib (its "run" makes the /dev/infiniband nodes when root), in both
# standby configurations: rc_varuna is listed with its operations, peer
# failure handling, and memory domains named primary+standby device
softib=$prefix/bin/softib
if [[ -x $softib ]]; then
    rc_varuna_softib_registry smoke
    for standby in auto same; do
        if [[ $standby == auto ]]; then
            mds="softib0+softib1 softib1+softib0"
        else
            mds="softib0+softib0 softib1+softib1"
        fi
        info=$(UCX_RC_VARUNA_STANDBY=$standby "$softib" run -- \
               "$ucx_info" -d 2>&1)
        for md in $mds; do
            # the memory domain's block, up to the next one
            block=$(awk -v md="$md" '
                /# Memory domain:/ { on = ($4 == md) }
                on' <<<"$info")
            [[ -n $block ]] ||
                rc_varuna_fail "STANDBY=$standby: no rc_varuna memory domain" \
                               "$md"
            for cap in "Transport: rc_varuna" "put_zcopy:" "get_zcopy:" \
                       "am_bcopy:" "atomic_fadd: 64 bit" \
                       "atomic_cswap: 64 bit" "error handling: peer failure"
            do
                grep -qF "$cap" <<<"$block" ||
                    rc_varuna_fail "STANDBY=$standby: $md lacks '$cap'"
            done
            [[ $(grep -c "Transport: rc_varuna" <<<"$block") -eq 2 ]] ||
                rc_varuna_fail "STANDBY=$standby: $md should offer both ports"
        done
        rc_varuna_pass "STANDBY=$standby: ucx_info -d lists rc_varuna on $mds"
    done

    # a standby per primary device; a device named there must exist
    mds_of() {
        UCX_RC_VARUNA_STANDBY=$1 "$softib" run -- "$ucx_info" -d 2>&1 |
            awk '/# Memory domain:/ { md = $4 }
                 /#     Component: rc_varuna/ { print md }' |
            sort | paste -sd' '
    }
    got=$(mds_of softib0=softib0,softib1=softib0)
    [[ $got == "softib0+softib0 softib1+softib0" ]] ||
        rc_varuna_fail "STANDBY=softib0=softib0,softib1=softib0: memory" \
                       "domains '$got'"
    got=$(mds_of softib1=softib1)
    [[ $got == "softib0+softib1 softib1+softib1" ]] ||
        rc_varuna_fail "STANDBY=softib1=softib1 (softib0: auto): memory" \
                       "domains '$got'"
    out=$(UCX_RC_VARUNA_STANDBY=softib0=softib7 "$softib" run -- \
          "$ucx_info" -d 2>&1)
    grep -q "there is no device 'softib7'" <<<"$out" &&
        ! grep -q 'Transport: rc_varuna' <<<"$out" ||
        rc_varuna_fail "STANDBY=softib0=softib7 should say softib7 does not" \
                       "exist"
    rc_varuna_pass "STANDBY=<primary>=<standby>,...: one standby per device"

    # a standby device that is down at start is still paired (endpoints
    # get their standby lane when it comes up); a device up comes first
    "$softib" link down softib1:1 >/dev/null
    "$softib" link down softib1:2 >/dev/null
    got=$(mds_of softib1)
    [[ $got == "softib0+softib1" ]] ||
        rc_varuna_fail "STANDBY=softib1, softib1 down: memory domains '$got'"
    got=$(mds_of auto)
    [[ $got == "softib0+softib0" ]] ||
        rc_varuna_fail "STANDBY=auto, softib1 down: memory domains '$got'"
    "$softib" link up softib1:1 >/dev/null
    "$softib" link up softib1:2 >/dev/null
    rc_varuna_pass "a standby device down at start: named, still its standby;" \
                   "auto: another port that is up"
else
    echo "note: $softib is missing; rc_varuna's listing not checked"
fi

# mlx5 built in, as in Debian's build (contrib/ucx-build): libuct_ib links
# libmlx5 and has the three mlx5 transports, and ucx_info -b says so; on
# softib (not an mlx5 device) UCX opens its devices with the verbs memory domain
ib=$prefix/lib/ucx/libuct_ib.so.0
needed=$(objdump -p "$ib" | awk '/NEEDED/ {print $2}')
grep -qx 'libmlx5\.so\.1' <<<"$needed" ||
    rc_varuna_fail "libuct_ib does not link libmlx5:" \
                   "$(tr '\n' ' ' <<<"$needed")"
symbols=$(nm -D --defined-only "$ib")
for tl in rc_mlx5 dc_mlx5 ud_mlx5; do
    grep -qw "uct_${tl}_tl" <<<"$symbols" ||
        rc_varuna_fail "libuct_ib has no $tl"
done
built=$("$ucx_info" -b)
for def in HAVE_MLX5_DV HAVE_MLX5_HW; do
    grep -Eq "^#define $def +1\$" <<<"$built" ||
        rc_varuna_fail "ucx_info -b: no $def"
done
rc_varuna_pass "mlx5 built in: libuct_ib links libmlx5, has rc_mlx5, dc_mlx5," \
               "ud_mlx5; ucx_info -b: HAVE_MLX5_DV, HAVE_MLX5_HW"

echo "PASS: $rc_varuna_checks checks of the UCX install in $prefix"
