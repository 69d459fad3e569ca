#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# What the scripts that run test/mpi's programs share: test/mpi/run.sh
# (MPI), test/mpi/shmem.sh (OpenSHMEM) and contrib/mpi-bench; sourced after
# contrib/common.sh.
#

# mpirun's options for a job over our UCX alone: pml and osc ucx with btl
# self only (nothing else can carry it), and Open MPI's UCX components told
# to take any transport and device (opal_common_ucx_tls/devices, whose
# synonyms pml_ucx_tls/devices osc ucx reads too: only "any" lets
# rc_varuna and softib in). After --allow-run-as-root --oversubscribe -np N.
mpi_ucx_only=(--mca pml ucx --mca osc ucx --mca btl self
              --mca pml_ucx_tls any --mca pml_ucx_devices any)

# Our UCX and softib first on the paths (make check passes
# RC_VARUNA_PREFIX), and Open MPI's tools TOOL... present
mpi_setup()
{
    local tool

    [[ -x $RC_VARUNA_PREFIX/bin/ucx_info &&
       -x $RC_VARUNA_PREFIX/bin/softib ]] ||
        rc_varuna_die "no UCX in $RC_VARUNA_PREFIX: run contrib/quickstart" \
                      "build"
    PATH=$RC_VARUNA_PREFIX/bin:$PATH
    LD_LIBRARY_PATH=$RC_VARUNA_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export PATH LD_LIBRARY_PATH
    for tool in "$@"; do
        command -v "$tool" >/dev/null ||
            rc_varuna_die "$tool missing: apt-get install openmpi-bin" \
                          "libopenmpi-dev (contrib/debian-packages)"
    done
}

# end every process of session $1 (TERM, then KILL after 5 s)
mpi_kill_session()
{
    local sid=$1 pids k

    for k in $(seq 26); do
        pids=$(ps -o pid= -s "$sid")
        [[ -n $pids ]] || return 0
        if ((k == 1)); then
            kill -TERM $pids 2>/dev/null
        elif ((k == 26)); then
            kill -KILL $pids 2>/dev/null
        fi
        sleep 0.2
    done
}

# Build test/mpi/NAME.c with the compiler wrapper CC into build/mpi/NAME
# when its source or a header it includes changed; prints the program's path
mpi_build()
{
    local cc=$1 name=$2
    local src=$RC_VARUNA_ROOT/test/mpi/$name.c
    local prog=$RC_VARUNA_BUILD/mpi/$name

    if [[ ! -x $prog || $src -nt $prog ||
          $RC_VARUNA_ROOT/test/mpi/softib_link.h -nt $prog ||
          $RC_VARUNA_ROOT/src/tools/varuna_verdict.h -nt $prog ]]; then
        mkdir -p "${prog%/*}"
        "$cc" -O2 -g -Wall -Werror -I"$RC_VARUNA_PREFIX/include" \
            -I"$RC_VARUNA_ROOT/src/tools" \
            -o "$prog" "$src" -L"$RC_VARUNA_PREFIX/lib" \
            -Wl,-rpath,"$RC_VARUNA_PREFIX/lib" -lsoftib >&2 ||
            rc_varuna_die "$cc $src failed"
    fi
    echo "$prog"
}

# The duplicate itself in a job's output OUT or the verdicts its processes
# wrote to VERDICTS (VARUNA_VERDICT_FILE), under blanket recovery:
# the program's "(EXECUTED TWICE)" (a counter or sum above what was
# added), fetch results of a target with a duplicate, a line matching the
# extended regex EXTRA (the caller's own evidence, if given), or UCP's
# assertion that a reply came for an operation already answered (in a
# reply handler: flush_ops_count going below 0, an atomic or RMA executed
# twice at the target, or its reply delivered twice; or the request the
# reply names released already, its id 0). Any other failure
# (another assertion, an abort, a short counter) is not evidence. Prints
# the evidence found; 0 if any. mpi_duplicate_evidence OUT VERDICTS [EXTRA]
mpi_duplicate_evidence()
{
    local file=$1 verdicts=$2 extra=${3:-}

    grep -h -m1 -E '\(EXECUTED TWICE\)|\([1-9][0-9]* with a duplicate\)' \
        "$verdicts" "$file" | head -n 1 | grep . && return 0
    [[ -n $extra ]] && grep -h -m1 -E "$extra" "$verdicts" "$file" |
        head -n 1 | grep . && return 0
    # the assertion ("[host:pid:n:TID] ... Assertion ...", the pid padded
    # to a width: "[vm:6480 :0:6480]"), then the first frames of the
    # backtrace of that thread ("==== backtrace (tid: TID) ====", other
    # processes' lines may come between): a reply handler among them
    awk '/Assertion `(worker->flush_ops_count > 0|\(\*req_p\)->id == \(id\)). failed/ {
             n = split(substr($0, 2, index($0, "]") - 2), id, ":")
             tid[id[n] + 0] = 1; next }
         /^==== backtrace \(tid: *[0-9]+\) ====/ {
             t = $0; gsub(/[^0-9]/, "", t); frames = (t + 0 in tid) ? 6 : 0
             next }
         frames > 0 && match($0, /ucp_(atomic_rep|rma_cmpl|get_rep)_handler/) {
             print "UCP: a reply for an operation already answered (" \
                   substr($0, RSTART, RLENGTH) ")"
             found = 1; exit }
         frames > 0 { frames-- }
         END { exit !found }' "$file"
}
