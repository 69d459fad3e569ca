#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# Smoke test of the installed build: ucx_info from our prefix is UCX 1.13.1
# configured by contrib/ucx-build, it loads libuct_varuna from the prefix and
# queries the rc_varuna component, and libuct_ib does not need libmlx5.
# Run by "make check" (RC_VARUNA_PREFIX set there) or by hand:
#   RC_VARUNA_PREFIX=build/prefix test/smoke/ucx-module.sh
#

set -euo pipefail

prefix=$(realpath "${RC_VARUNA_PREFIX:?set RC_VARUNA_PREFIX to the prefix}")
ucx_info=$prefix/bin/ucx_info
checks=0

fail()
{
    echo "FAIL: $*"
    exit 1
}

pass()
{
    echo "ok: $*"
    checks=$((checks + 1))
}

# Only our prefix: its libraries and modules, not another UCX on the system
export LD_LIBRARY_PATH=$prefix/lib
unset UCX_MODULE_DIR UCX_MODULES UCX_TLS

version=$("$ucx_info" -v)
echo "$version"
grep -qx '# Version 1\.13\.1' <<<"$version" ||
    fail "ucx_info is not UCX 1.13.1"
grep -q "^# Configured with: .*--prefix=$prefix .*--enable-gtest" \
    <<<"$version" || fail "ucx_info was not configured by contrib/ucx-build"
pass "ucx_info -v: UCX 1.13.1 configured by contrib/ucx-build"

log=$(UCX_MODULE_LOG_LEVEL=debug UCX_LOG_LEVEL=debug "$ucx_info" -d 2>&1)
grep -E "loaded $prefix/lib/ucx/libuct_varuna\.so" <<<"$log" ||
    fail "ucx_info -d did not load $prefix/lib/ucx/libuct_varuna.so"
pass "ucx_info -d loads libuct_varuna from the prefix"

grep "rc_varuna transport is not implemented yet" <<<"$log" ||
    fail "ucx_info -d did not query the rc_varuna component"
pass "ucx_info -d queries the rc_varuna component"

needed=$(objdump -p "$prefix/lib/ucx/libuct_ib.so.0" |
         awk '/NEEDED/ {print $2}')
if grep -q mlx5 <<<"$needed"; then
    fail "libuct_ib needs libmlx5: $(tr '\n' ' ' <<<"$needed")"
fi
pass "libuct_ib does not need libmlx5"

echo "PASS: $checks checks of the UCX install in $prefix"
