#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# What the two gtest engines share, test/gtest/run-own.sh (our cases) and
# test/gtest/run-ucx-suites.sh (UCX's own suites): a gtest binary of UCX's
# build tree, run under "softib run" in a fabric of its own and under a
# timeout. Sourced after contrib/common.sh.
#

# gtest_softib_setup BINARY NAME: the build tree's test/gtest/BINARY
# (RC_VARUNA_UCX_BUILD, default build/ucx/build) and our softib must exist
# (exit 1 otherwise); our prefix's lib/ leaves LD_LIBRARY_PATH, since the
# binary uses UCX's libraries from its build tree; a softib registry of its
# own (NAME); UCX_HANDLE_ERRORS=bt (no terminal in CI: a backtrace on a
# fatal error instead of freezing) and UCX_LOG_LEVEL=warn unless set; and
# the binary's directory as the working directory. Sets gtest_build,
# gtest_bin and gtest_softib.
gtest_softib_setup()
{
    gtest_build=${RC_VARUNA_UCX_BUILD:-$UCX_BLD}
    gtest_bin=$gtest_build/test/gtest/$1
    gtest_softib=$RC_VARUNA_PREFIX/bin/softib
    [[ -x $gtest_bin ]] ||
        { echo "$gtest_bin is missing: build first" >&2; exit 1; }
    [[ -x $gtest_softib ]] ||
        { echo "$gtest_softib is missing: build first" >&2; exit 1; }

    LD_LIBRARY_PATH=$(printf '%s' "${LD_LIBRARY_PATH:-}" | tr ':' '\n' |
                      grep -vxF "$RC_VARUNA_PREFIX/lib" | paste -sd: -) ||
        true
    export LD_LIBRARY_PATH
    # fault rules and link changes of other runs must not reach this one
    rc_varuna_softib_registry "$2"
    export UCX_HANDLE_ERRORS=${UCX_HANDLE_ERRORS:-bt}
    export UCX_LOG_LEVEL=${UCX_LOG_LEVEL:-warn}
    cd "$gtest_build/test/gtest" || exit 1
}

# gtest_softib_run SECONDS COMMAND...: COMMAND under "softib run", killed
# after SECONDS (exit status 124 then)
gtest_softib_run()
{
    local secs=$1

    shift
    timeout --kill-after=30 "$secs" "$gtest_softib" run -- "$@"
}
