#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# The build layout and the helpers shared by the scripts of contrib/ and
# test/: a script there that needs a path of the build or one of these
# helpers sources this file rather than work the path out or write the
# helper again (softib's own test scripts excepted: softib stands alone,
# with softib/test/pair.sh). Everything generated lives under build/
# (git-ignored).
#

RC_VARUNA_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
RC_VARUNA_BUILD=$RC_VARUNA_ROOT/build
RC_VARUNA_LOGS=$RC_VARUNA_BUILD/logs

# The UCX we build on: Debian bookworm's source package (DESIGN.md section 6)
UCX_VERSION=1.13.1
UCX_DEB_VERSION=1.13.1-1

# Install prefix of UCX and of our top-level build; the UCX tree and its build
: "${RC_VARUNA_PREFIX:=$RC_VARUNA_BUILD/prefix}"
UCX_DIR=$RC_VARUNA_BUILD/ucx
UCX_SRC=$UCX_DIR/src
UCX_BLD=$UCX_DIR/build

# Compilers and parallelism for every build step
: "${CC:=ccache gcc}"
: "${CXX:=ccache g++}"
: "${CCACHE_DIR:=$RC_VARUNA_BUILD/ccache}"
: "${JOBS:=$(($(nproc) + 1))}"
export CCACHE_DIR

# Our gtest cases in UCX's gtest binary
: "${RC_VARUNA_GTEST_FILTER:=*rc_varuna*}"


# -------------------------------------------------------------------------
# The script: its usage, its messages, its cleanups at exit

# rc_varuna_usage [LAST]: the running script's usage, from its header
# comment: the lines from "# Usage" up to the next bare "#" (or through the
# first line matching the sed regex LAST, for a usage with blank lines in
# it), without their "# ", on stderr; exits 2
rc_varuna_usage()
{
    if (($#)); then
        sed -n "/^# Usage/,/$1/s/^# \{0,1\}//p" "$0" >&2
    else
        sed -n '/^# Usage/,/^#$/{/^#$/!s/^# \{0,1\}//p}' "$0" >&2
    fi
    exit 2
}

rc_varuna_progress()
{
    printf '[%s] %s\n' "${0##*/}" "$*"
}

rc_varuna_die()
{
    printf '[%s] error: %s\n' "${0##*/}" "$*" >&2
    exit 1
}

# rc_varuna_at_exit COMMAND: run the shell command COMMAND (a string, as
# trap takes it) when the script exits, before those registered earlier.
# One EXIT trap runs every cleanup of a script, so that a helper's and the
# script's own do not replace each other: a script that registers any here
# sets no EXIT trap of its own. A failing COMMAND changes neither the exit
# status nor what runs after it.
rc_varuna_at_exit_cmds=()
rc_varuna_at_exit()
{
    rc_varuna_at_exit_cmds=("$1" "${rc_varuna_at_exit_cmds[@]}")
    trap rc_varuna_at_exit_run EXIT
}

rc_varuna_at_exit_run()
{
    local cmd

    for cmd in "${rc_varuna_at_exit_cmds[@]}"; do
        eval "$cmd" || true
    done
}


# -------------------------------------------------------------------------
# Our build and the system: steps logged, configure once, the build on the
# paths, root for apt-get

# rc_varuna_run_logged <log name> <command...>: run a long step with its output
# in build/logs/<log name>.log; show the end of the log if it fails.
rc_varuna_run_logged()
{
    local log=$RC_VARUNA_LOGS/$1.log
    local start=$SECONDS
    shift

    mkdir -p "$RC_VARUNA_LOGS"
    if ! "$@" >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        rc_varuna_die "'$*' failed, full log: $log"
    fi
    rc_varuna_progress "  done in $((SECONDS - start)) s" \
                       "(log: ${log#$RC_VARUNA_ROOT/})"
}

# rc_varuna_configure <log name> <build dir> <configure> [args...]: run
# configure in <build dir> unless it already ran there with the same arguments,
# the same configure script (a regenerated one runs again, cleanly) and the
# same versions of the packages of contrib/debian-packages (it checks for some)
rc_varuna_configure()
{
    local log=$1 dir=$2
    local stamp=$dir/.rc_varuna-configure
    local id
    shift 2

    id=$({ printf '%s\n' "$@"
           stat -c %Y "$1"
           sed 's/#.*//' "$RC_VARUNA_ROOT/contrib/debian-packages" |
               xargs dpkg-query -W 2>/dev/null || true; } |
         sha256sum | cut -d' ' -f1)
    [[ -f $dir/Makefile && -f $stamp && $(<"$stamp") == "$id" ]] && return

    rc_varuna_progress "configuring ${dir#$RC_VARUNA_ROOT/}"
    mkdir -p "$dir"
    rm -f "$stamp"
    rc_varuna_run_logged "$log" sh -c 'cd "$1" && shift && exec "$@"' sh \
        "$dir" "$@"
    printf '%s\n' "$id" >"$stamp"
}

# rc_varuna_use_build [--keep-prefix] [PROGRAM...]: our build first on the
# paths, as ". build/env.sh" puts it (PATH, LD_LIBRARY_PATH, RC_VARUNA_PREFIX
# and the UCX trees; contrib/ucx-build writes it), and each PROGRAM on PATH;
# dies when either is not built. With --keep-prefix, the RC_VARUNA_PREFIX
# set before (make check's $(prefix)) wins over env.sh's.
rc_varuna_use_build()
{
    local prefix=$RC_VARUNA_PREFIX prog

    [[ -f $RC_VARUNA_BUILD/env.sh ]] ||
        rc_varuna_die "build/env.sh is missing: run contrib/quickstart build"
    . "$RC_VARUNA_BUILD/env.sh"
    if [[ ${1:-} == --keep-prefix ]]; then
        RC_VARUNA_PREFIX=$prefix
        export RC_VARUNA_PREFIX
        shift
    fi
    for prog in "$@"; do
        command -v "$prog" >/dev/null || rc_varuna_die "$prog is not built"
    done
}

# Run a command as root (apt-get), through sudo when we are not root
rc_varuna_as_root()
{
    if [[ $EUID -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null; then
        sudo -n "$@"
    else
        rc_varuna_die "'$*' needs root (or sudo)"
    fi
}

# gnuplot for the benchmarks' plots: Debian's gnuplot-nox, installed with
# apt-get on first use
rc_varuna_need_gnuplot()
{
    command -v gnuplot >/dev/null && return
    rc_varuna_progress "installing gnuplot-nox (apt-get)"
    rc_varuna_as_root apt-get install -y -q gnuplot-nox >/dev/null ||
        rc_varuna_die "cannot install gnuplot-nox"
}

# The median of the numbers given (words "nan" left out), "-" if none:
# rc_varuna_median VALUE...
rc_varuna_median()
{
    printf '%s\n' "$@" | grep -vx nan | sort -g |
        awk '{ v[NR] = $1 }
             END { if (NR == 0) { print "-"; exit }
                   if (NR % 2) print v[(NR + 1) / 2]
                   else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# One of softib's counters, summed over the devices of the registry in use
# ("softib counters"; SOFTIB, or softib on PATH): rc_varuna_softib_counter
# NAME
rc_varuna_softib_counter()
{
    "${SOFTIB:-softib}" counters | awk -v c="$1" '$1 == c { print $2 }'
}


# -------------------------------------------------------------------------
# Tests: a softib fabric of their own, the skip policy, checks said and
# counted, the verdicts of the processes of a run

# rc_varuna_softib_registry NAME: a softib fabric of the script's own, so
# that fault rules and link changes of other runs never reach it, nor its
# theirs: SOFTIB_REGISTRY=/dev/shm/softib-NAME.PID, exported, new (a stale
# one of that name removed), removed at exit (as softib/test/pair.sh's
# sib_setup does for softib's own tests, which do not source this file)
rc_varuna_softib_registry()
{
    export SOFTIB_REGISTRY=/dev/shm/softib-$1.$$
    rm -f "$SOFTIB_REGISTRY"
    rc_varuna_at_exit "rm -f $(printf %q "$SOFTIB_REGISTRY")"
}

# The skip policy. A make check runner whose prerequisite is missing has
# tested nothing: it says why and exits 77, automake's SKIP (rc_varuna_skip
# REASON...). contrib/quickstart check then judges the skips
# (rc_varuna_judge_skips): in CI (CI=true) a skip fails the check, since
# every prerequisite is the project's to install; elsewhere it is said,
# loudly, and the check passes.
rc_varuna_skip()
{
    echo "SKIP: $*"
    exit 77
}

# rc_varuna_judge_skips RUNNER...: the runners that skipped, judged as above
rc_varuna_judge_skips()
{
    (($# > 0)) || return 0
    [[ ${CI:-} == true ]] &&
        rc_varuna_die "runners skipped in CI (a prerequisite is missing):" "$@"
    rc_varuna_progress "WARNING: runners skipped, so not tested here" \
                       "(CI fails on this):" "$@"
}

# A test's checks, each said on a line of its own and counted in
# rc_varuna_checks: rc_varuna_pass WHAT... says "ok: WHAT"; rc_varuna_fail
# WHAT... says "FAIL: WHAT" and ends the test (exit 1)
rc_varuna_checks=0
rc_varuna_pass()
{
    echo "ok: $*"
    rc_varuna_checks=$((rc_varuna_checks + 1))
}

rc_varuna_fail()
{
    echo "FAIL: $*"
    exit 1
}

# rc_varuna_verdicts FILE WHO...: judge the verdict lines that the processes
# of a run appended to FILE (VARUNA_VERDICT_FILE, src/tools/varuna_verdict.h:
# one write each, so no line is cut or mixed with another process's output):
# one "WHO: OK: ..." or "WHO (pid P): OK: ..." for each WHO ("client",
# "rank 2", "pe 0"). Prints a line for each WHO that did not say OK exactly
# once: its WRONG line, "WHO: no verdict" or "WHO: N verdicts". Returns 0
# only when every WHO said OK once. No fork: the fault scenarios call it in
# a TCG guest.
rc_varuna_verdicts()
{
    local file=$1 who line rest n ok bad=0

    shift
    for who in "$@"; do
        n=0 ok=0
        if [[ -f $file ]]; then
            while IFS= read -r line; do
                case $line in
                "$who: "*) rest=${line#"$who: "} ;;
                "$who (pid "*"): "*) rest=${line#"$who (pid "*"): "} ;;
                *) continue ;;
                esac
                n=$((n + 1))
                if [[ $rest == OK || $rest == OK:* ]]; then
                    ok=$((ok + 1))
                else
                    echo "${line:0:200}"
                fi
            done <"$file"
        fi
        if ((n == 0)); then
            echo "$who: no verdict"
        elif ((n > 1)); then
            echo "$who: $n verdicts"
        fi
        ((n == 1 && ok == 1)) || bad=$((bad + 1))
    done
    ((bad == 0))
}
