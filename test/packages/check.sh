#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# The Debian packages of contrib/debian-build, installed into the system in
# place of Debian's UCX and used with system paths only: no LD_LIBRARY_PATH,
# nothing of build/prefix on PATH. Checks that
#   - apt-get installs them over Debian's libucx0 (1.13.1-1+varunaN);
#   - /usr/bin/ucx_info -v is that UCX, configured as Debian configures it;
#   - libuct_ib has mlx5 (rc_mlx5, dc_mlx5, ud_mlx5: every mlx5 symbol of
#     Debian's own libuct_ib, recorded before the install) and ucx_info -b
#     says so; ucx_info -b is Debian's (its ucx-utils from the archive,
#     unpacked aside) line for line but the module list;
#   - /usr/bin/ucx_info -d lists rc_varuna on softib, from
#     /usr/lib/<arch>/ucx/libuct_varuna.so;
#   - Debian's Open MPI (mpirun of openmpi-bin, pml ucx, osc ucx) runs
#     test/mpi/bidir_failover with 2 ranks over UCX_TLS=rc_varuna,ud_verbs:aux
#     through a link failure (softib0:1 down halfway), every operation
#     executed once, each rank's libucp and libuct_varuna the system's;
#   - the failover demo (src/tools/varuna_demo.c, compiled against the
#     installed libucx-dev) comes out right with a link down (rc_varuna's
#     recovery) and with both paths of one of two lanes down (UCP's lane
#     failover, in libucp), as contrib/demo runs it.
# Then, and also when a check fails or the script is interrupted, it puts
# back the packages that were installed before (apt-get install
# --allow-downgrades libucx0=1.13.1-1 ...) and removes those that were not
# (libucx-dev, ucx-utils), with their automatic-install marks as before.
#
# softib is not a libibverbs provider but a drop-in libibverbs.so.1
# (softib/README.md): it reaches the system's UCX through LD_PRELOAD of a
# copy of that one library (taken from build/prefix/lib/softib, with
# libsoftib for the MPI program's link control), so that nothing of our
# UCX prefix is on any path.
#
# With --module, the same for the module alone (contrib/module-build) in
# Debian's own, unmodified UCX: Debian's libucx0, ucx-utils and libucx-dev
# (installed if missing, removed again at the end), the module loaded with
# LD_PRELOAD from a copy outside build/; ucx_info -v is Debian's 1.13.1,
# rc_varuna is listed, its first log line names the mode, Open MPI and the
# demo's rc_varuna run come through the link failure exactly once. UCP's
# lane failover is not in Debian's libucp: the demo's lane run is left out.
#
# The packages' run is not part of make check: building them takes minutes
# (contrib/debian-build). The --module run is (test/check/module-only.sh).
#
# Usage: test/packages/check.sh [DEB_DIR]   (default: build/deb)
#        test/packages/check.sh --module
#
# Needs: root (apt-get), the packages (contrib/debian-build), softib built
# (contrib/quickstart build), Debian's openmpi-bin and libopenmpi-dev. Logs in
# build/logs/packages/.
#

set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
. "$RC_VARUNA_ROOT/contrib/scale-lib.sh"
. "$RC_VARUNA_ROOT/test/mpi/lib.sh"

module=0
if [[ ${1:-} == --module ]]; then
    module=1
    shift
fi
deb_dir=$(realpath "${1:-$RC_VARUNA_BUILD/deb}")
work=$RC_VARUNA_BUILD/deb-work/check
logs=$RC_VARUNA_LOGS/packages
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
syslib=/usr/lib/$multiarch
# the same directory as the loader may name it (/lib is /usr/lib: merged /usr)
sysre="(/usr)?/lib/$multiarch"

[[ $EUID -eq 0 ]] || rc_varuna_die "installs packages: run as root"
if ((module)); then
    # Debian's own packages, from the archive
    debs=("libucx0=$UCX_DEB_VERSION" "ucx-utils=$UCX_DEB_VERSION"
          "libucx-dev=$UCX_DEB_VERSION")
    "$RC_VARUNA_ROOT/contrib/module-build" ||
        rc_varuna_die "contrib/module-build failed"
else
    debs=("$deb_dir"/*.deb)
    [[ -f ${debs[0]} ]] ||
        rc_varuna_die "no .deb in $deb_dir: run contrib/debian-build"
fi
for f in "$RC_VARUNA_PREFIX/lib/softib/libibverbs.so.1" \
         "$RC_VARUNA_PREFIX/lib/libsoftib.so.0"; do
    [[ -f $f ]] || rc_varuna_die "$f missing: run contrib/quickstart build"
done
command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
    rc_varuna_die "mpicc, mpirun missing: apt-get install openmpi-bin libopenmpi-dev"

rm -rf "$work" "$logs"
mkdir -p "$work/softib" "$logs"

# Only system paths from here on, for this script and what it runs. A
# program under test gets softib through sib_env only.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
unset LD_LIBRARY_PATH LD_PRELOAD UCX_MODULE_DIR UCX_MODULES UCX_TLS
unset UCX_NET_DEVICES OPAL_PREFIX
export PATH

# The packages, their version, and what the system has of each now
pkgs=() restore=() remove=() auto=()
for deb in "${debs[@]}"; do
    if ((module)); then
        pkg=${deb%%=*} version=${deb#*=}
    else
        pkg=$(dpkg-deb -f "$deb" Package)
        version=$(dpkg-deb -f "$deb" Version)
    fi
    pkgs+=("$pkg")
    old=$(dpkg-query -W -f '${db:Status-Status} ${Version}' "$pkg" \
          2>/dev/null) || old=
    if [[ $old == installed\ * ]]; then
        restore+=("$pkg=${old#installed }")
    else
        remove+=("$pkg")
    fi
done
mapfile -t auto < <(apt-mark showauto "${pkgs[@]}")
if ((module)); then
    echo "packages: Debian's ${pkgs[*]} $version, the module of" \
         "contrib/module-build preloaded"
else
    echo "packages: ${pkgs[*]} $version from ${deb_dir#$RC_VARUNA_ROOT/}"
fi
echo "before: ${restore[*]:-nothing} installed${remove[*]:+, not installed: ${remove[*]}}"

registry=/dev/shm/softib-packages.$$

# Put the system back as it was: the packages that were not installed go,
# the others return to their version (a downgrade), with their marks
installed=0
restore_system()
{
    local rc=$? ok=1 item got

    trap - EXIT INT TERM HUP
    # a reader gone (the terminal, a pipe) must not stop the restoring
    trap '' PIPE
    rm -f "$registry"
    ((installed)) || exit $rc
    echo "restoring: ${remove[*]:+remove ${remove[*]}; }install ${restore[*]}"
    if ((${#remove[@]})); then
        nice -n 19 apt-get remove -y -q "${remove[@]}" \
            >"$logs/restore-remove.log" 2>&1 || ok=0
    fi
    if ((${#restore[@]})); then
        nice -n 19 apt-get install -y -q --allow-downgrades "${restore[@]}" \
            >"$logs/restore-install.log" 2>&1 || ok=0
    fi
    ((${#auto[@]})) && apt-mark auto "${auto[@]}" >/dev/null
    for item in "${restore[@]}"; do
        got=$(dpkg-query -W -f '${Version}' "${item%%=*}" 2>/dev/null) || got=
        [[ $got == "${item#*=}" ]] || ok=0
    done
    for item in "${remove[@]}"; do
        [[ $(dpkg-query -W -f '${db:Status-Status}' "$item" \
             2>/dev/null) == installed ]] && ok=0
    done
    if ((ok)); then
        echo "restored: ${restore[*]}${remove[*]:+; removed ${remove[*]}}"
    else
        echo "ERROR: the system is not as before; see $logs/restore-*.log"
        rc=1
    fi
    exit $rc
}
trap restore_system EXIT
trap 'exit 130' INT TERM HUP PIPE

# Debian's libuct_ib, before ours replaces it: its mlx5 symbols are the
# reference
nm -D --defined-only "$syslib/ucx/libuct_ib.so.0" | awk '{print $3}' |
    grep -i mlx5 | sort >"$work/mlx5-debian.txt" || true

# Debian's build configuration (ucx_info -b), the reference for ours:
# Debian's ucx-utils and libucx0 from the archive, unpacked here, not
# installed
if ! ((module)); then
    ref=$work/debian-ucx
    mkdir -p "$ref/root"
    (cd "$ref" && apt-get download "ucx-utils=$UCX_DEB_VERSION" \
                     "libucx0=$UCX_DEB_VERSION") >"$logs/download.log" 2>&1 ||
        rc_varuna_fail "apt-get download of Debian's ucx-utils and libucx0" \
                       "$UCX_DEB_VERSION (log: $logs/download.log)"
    for deb in "$ref"/*.deb; do
        dpkg-deb -x "$deb" "$ref/root"
    done
    LD_LIBRARY_PATH=$ref/root$syslib "$ref/root/usr/bin/ucx_info" -b \
        >"$work/ucx_info-b-debian.txt" ||
        rc_varuna_fail "Debian's ucx_info -b does not run"
fi

# A snapshot of softib's drop-in libibverbs and of libsoftib (the MPI
# program takes the link down through it), out of build/prefix
cp "$(realpath "$RC_VARUNA_PREFIX/lib/softib/libibverbs.so.1")" \
   "$work/softib/libibverbs.so.1"
cp "$(realpath "$RC_VARUNA_PREFIX/lib/libsoftib.so.0")" \
   "$work/softib/libsoftib.so.0"
ln -sf libsoftib.so.0 "$work/softib/libsoftib.so"
# UCX uses an IB device only when /dev/infiniband/<dev> exists
if [[ ! -e /dev/infiniband/softib0 || ! -e /dev/infiniband/softib1 ]]; then
    "$RC_VARUNA_PREFIX/bin/softib" devnodes >/dev/null
fi

# the environment of a program on softib: system paths, softib preloaded,
# a fabric of our own (registry: set before the trap, which removes it)
preload=$work/softib/libibverbs.so.1
# the module alone: a copy outside build/prefix, preloaded (its constructor
# registers rc_varuna before UCP asks UCT for its components)
modlib=$syslib/ucx/libuct_varuna.so.0
if ((module)); then
    mkdir -p "$work/module"
    cp "$RC_VARUNA_BUILD/module/libuct_varuna.so.0" "$work/module/"
    modlib=$work/module/libuct_varuna.so.0
    preload+=" $modlib"
fi
sib_env=(env -i PATH="$PATH" HOME="${HOME:-/root}"
         SOFTIB_REGISTRY="$registry" LD_PRELOAD="$preload")

### the install
start=$SECONDS
installed=1
nice -n 19 apt-get install -y -q "${debs[@]}" >"$logs/install.log" 2>&1 ||
    { tail -20 "$logs/install.log"
      rc_varuna_fail "apt-get install ${debs[*]}"; }
for pkg in "${pkgs[@]}"; do
    got=$(dpkg-query -W -f '${Version}' "$pkg")
    [[ $got == "$version" ]] ||
        rc_varuna_fail "$pkg is $got after the install, not $version"
done
if ((module)); then
    rc_varuna_pass "apt-get install Debian's ${pkgs[*]} $version" \
                   "($((SECONDS - start)) s)"
else
    rc_varuna_pass "apt-get install ${deb_dir#$RC_VARUNA_ROOT/}/*.deb:" \
                   "${pkgs[*]} $version ($((SECONDS - start)) s)"
fi

### ucx_info -v: the system's, our version, Debian's configuration
[[ $(command -v ucx_info) == /usr/bin/ucx_info ]] ||
    rc_varuna_fail "ucx_info is $(command -v ucx_info), not /usr/bin/ucx_info"
ucx_info -v >"$work/ucx_info-v.txt"
sed 's/^/    /' "$work/ucx_info-v.txt"
if ((module)); then
    want="1.13.1"
else
    want="1.13.1+varuna${version##*+varuna}"
fi
grep -qxF "# Version $want" "$work/ucx_info-v.txt" ||
    rc_varuna_fail "ucx_info -v: not version $want"
grep -q -- '--prefix=/usr .*--disable-logging' "$work/ucx_info-v.txt" ||
    rc_varuna_fail "ucx_info -v: not configured by Debian's debian/rules"
grep -q -e "$RC_VARUNA_ROOT" -e '--enable-gtest' "$work/ucx_info-v.txt" &&
    rc_varuna_fail "ucx_info -v: configured by contrib/ucx-build"
ldd /usr/bin/ucx_info >"$work/ldd-ucx_info.txt"
for lib in libucp libuct libucs; do
    grep -qE "$lib\.so\.0 => $sysre/$lib\.so\.0" "$work/ldd-ucx_info.txt" ||
        rc_varuna_fail "ucx_info does not use $syslib/$lib.so.0"
done
rc_varuna_pass "/usr/bin/ucx_info -v: UCX $want, Debian's configuration," \
               "libraries from $syslib"

### mlx5: every mlx5 symbol of Debian's libuct_ib is in ours (the module
### alone runs in Debian's own)
((module)) || {
nm -D --defined-only "$syslib/ucx/libuct_ib.so.0" | awk '{print $3}' |
    grep -i mlx5 | sort >"$work/mlx5-ours.txt" || true
missing=$(comm -23 "$work/mlx5-debian.txt" "$work/mlx5-ours.txt" | wc -l)
n_deb=$(wc -l <"$work/mlx5-debian.txt")
n_ours=$(wc -l <"$work/mlx5-ours.txt")
((n_ours > 0 && missing == 0)) ||
    rc_varuna_fail "libuct_ib: $n_ours mlx5 symbols, $missing of Debian's" \
                   "$n_deb missing"
# each transport's definition (UCT_TL_DEFINE)
for tl in rc_mlx5 dc_mlx5 ud_mlx5; do
    grep -qx "uct_${tl}_tl" "$work/mlx5-ours.txt" ||
        rc_varuna_fail "libuct_ib has no uct_${tl}_tl"
done
grep -q 'NEEDED *libmlx5\.so' <(objdump -p "$syslib/ucx/libuct_ib.so.0") ||
    rc_varuna_fail "libuct_ib does not link libmlx5"
ucx_info -b >"$work/ucx_info-b.txt"
grep -E 'MLX5|HAVE_DEVX|HAVE_DC' "$work/ucx_info-b.txt" >"$work/ucx_info-b-mlx5.txt" ||
    true
for def in HAVE_MLX5_DV HAVE_MLX5_HW; do
    grep -qE "^#define $def +1\$" "$work/ucx_info-b-mlx5.txt" ||
        rc_varuna_fail "ucx_info -b: no $def"
done
sed 's/^/    /' "$work/ucx_info-b-mlx5.txt" | head -8
rc_varuna_pass "mlx5 built in: libuct_ib links libmlx5, has rc_mlx5, dc_mlx5," \
               "ud_mlx5, $n_ours mlx5 symbols (Debian's: $n_deb, none" \
               "missing); ucx_info -b: HAVE_MLX5_DV, HAVE_MLX5_HW"

# the whole build configuration is Debian's, but the module list
diff "$work/ucx_info-b-debian.txt" "$work/ucx_info-b.txt" \
    >"$work/ucx_info-b.diff" || true
differ=$(grep '^[<>]' "$work/ucx_info-b.diff" | grep -vc uct_MODULES) || true
((differ == 0)) && grep -q '^#define uct_MODULES .*:varuna:' \
    "$work/ucx_info-b.txt" || {
    sed 's/^/    /' "$work/ucx_info-b.diff" | head -20
    rc_varuna_fail "ucx_info -b differs from Debian's in $differ lines but" \
                   "uct_MODULES"
}
sed -n 's/^[<>]/   &/p' "$work/ucx_info-b.diff"
rc_varuna_pass "ucx_info -b: Debian's $(wc -l <"$work/ucx_info-b-debian.txt")" \
               "lines, but uct_MODULES (varuna added)"
}

### ucx_info -d on softib: rc_varuna, from the system's module directory
rm -f "$registry"
"${sib_env[@]}" UCX_MODULE_LOG_LEVEL=debug UCX_LOG_LEVEL=debug \
    ucx_info -d >"$work/ucx_info-d.txt" 2>&1 || true
rm -f "$registry"
if ((module)); then
    # the module's first line names the mode and what it lacks
    grep -m1 'rc_varuna: module for an unmodified UCX' "$work/ucx_info-d.txt" |
        sed -E 's/^.*UCX  INFO  /    /' | grep . ||
        rc_varuna_fail "ucx_info -d: the module did not say which mode it" \
                       "runs in"
else
    grep -E "loaded $sysre/ucx/libuct_varuna\.so" "$work/ucx_info-d.txt" |
        sed -E 's/^.*UCX  DEBUG /    /; s/ \[0x[0-9a-f]+\]$//' | grep . ||
        rc_varuna_fail "ucx_info -d did not load $syslib/ucx/libuct_varuna.so"
fi
grep -q "$RC_VARUNA_PREFIX" "$work/ucx_info-d.txt" &&
    rc_varuna_fail "ucx_info -d loaded something from $RC_VARUNA_PREFIX"
for md in softib0+softib1 softib1+softib0; do
    block=$(awk -v md="$md" '/# Memory domain:/ { on = ($4 == md) } on' \
            "$work/ucx_info-d.txt")
    for cap in "Transport: rc_varuna" "put_zcopy:" "atomic_fadd: 64 bit" \
               "error handling: peer failure"; do
        grep -qF "$cap" <<<"$block" ||
            rc_varuna_fail "ucx_info -d: memory domain $md lacks '$cap'"
    done
done
grep -q 'Transport: ud_verbs' "$work/ucx_info-d.txt" ||
    rc_varuna_fail "ucx_info -d: no ud_verbs on softib"
rc_varuna_pass "/usr/bin/ucx_info -d on softib: rc_varuna on softib0+softib1" \
               "and softib1+softib0, module $modlib"

### Open MPI: Debian's mpirun, pml ucx, through a link failure
prog=$work/bidir_failover
mpicc -O2 -g -Wall -Werror -I"$RC_VARUNA_ROOT/softib/include" \
    -I"$RC_VARUNA_ROOT/src/tools" -o "$prog" "$RC_VARUNA_ROOT/test/mpi/bidir_failover.c" \
    -L"$work/softib" -Wl,-rpath,"$work/softib" -lsoftib ||
    rc_varuna_fail "mpicc test/mpi/bidir_failover.c"
mpi_logs=$logs/mpi
mkdir -p "$mpi_logs"
: >"$mpi_logs/report.json"
: >"$mpi_logs/verdicts"
mpirun_args=(--allow-run-as-root --oversubscribe -np 2
             "${mpi_ucx_only[@]}"
             -x UCX_TLS=rc_varuna,ud_verbs:aux -x UCX_NET_DEVICES=softib0:1
             -x UCX_LOG_LEVEL=info
             -x UCX_RC_VARUNA_REPORT="$mpi_logs/report.json"
             -x VARUNA_VERDICT_FILE="$mpi_logs/verdicts")
rm -f "$registry"
start=$SECONDS
"${sib_env[@]}" timeout --kill-after=10 120 \
    mpirun "${mpirun_args[@]}" "$prog" -q -i 4000 \
    >"$mpi_logs/out.log" 2>&1 &
job=$!
# while it runs: where each rank's libucp and libuct_varuna come from
: >"$mpi_logs/maps.txt"
while kill -0 $job 2>/dev/null; do
    for pid in $(pgrep -x bidir_failover || true); do
        # (a rank may be gone by now)
        { grep -E 'libucp\.so|libuct_varuna\.so|libibverbs\.so' \
              "/proc/$pid/maps" 2>/dev/null || true; } |
            awk -v p="$pid" '{print p, $6}'
    done | sort -u >>"$mpi_logs/maps.txt"
    sleep 0.2
done
rc=0
wait $job || rc=$?
elapsed=$((SECONDS - start))
rm -f "$registry"
sort -u -o "$mpi_logs/maps.txt" "$mpi_logs/maps.txt"
sed 's/^/    /' "$mpi_logs/verdicts"
grep -m1 'failover softib' "$mpi_logs/out.log" | cut -c1-200 | sed 's/^/    /'
((rc == 0)) ||
    rc_varuna_fail "mpirun exited $rc (log:" \
                   "${mpi_logs#$RC_VARUNA_ROOT/}/out.log)"
# each rank's verdict and the closing one, from the file they wrote them to
problems=$(rc_varuna_verdicts "$mpi_logs/verdicts" "rank 0" "rank 1" \
           bidir_failover) || rc_varuna_fail "bidir_failover: $problems"
for pid in $(sed -n -E 's/^rank [0-9]+ \(pid ([0-9]+)\):.*/\1/p' \
             "$mpi_logs/verdicts"); do
    grep -q "{\"event\":\"failover\",\"pid\":$pid," "$mpi_logs/report.json" ||
        rc_varuna_fail "rank with pid $pid wrote no failover report"
    grep -qE "^$pid $sysre/libucp\.so\.0" "$mpi_logs/maps.txt" &&
    grep -qE "^$pid (/usr)?${modlib#/usr}(\.[0-9]+)*\$" "$mpi_logs/maps.txt" ||
        rc_varuna_fail "rank with pid $pid: libucp not seen in $syslib or" \
                       "libuct_varuna not at $modlib (maps:" \
                       "${mpi_logs#$RC_VARUNA_ROOT/}/maps.txt)"
done
grep -q "$RC_VARUNA_BUILD/prefix" "$mpi_logs/maps.txt" &&
    rc_varuna_fail "a rank mapped something of $RC_VARUNA_BUILD/prefix"
lost=$(grep -o '"results_lost":[0-9]*' "$mpi_logs/report.json" |
       awk -F: '{s += $2} END {print s + 0}')
((lost == 0)) || rc_varuna_fail "$lost fetch results lost in the failovers"
reports=$(grep -c '"event":"failover"' "$mpi_logs/report.json")
rc_varuna_pass "Debian's mpirun, 2 ranks, pml ucx and osc ucx over" \
               "rc_varuna,ud_verbs:aux, softib0:1 down halfway: OK, exactly" \
               "once ($reports failover reports, libucp from $syslib," \
               "libuct_varuna $modlib; $elapsed s)"

### the failover demo, built against the installed libucx-dev: rc_varuna's
### recovery (softib0:1 down), and UCP's lane failover in libucp (two lanes,
### both paths of the first down), as contrib/demo runs them
demo=$work/varuna_demo
gcc -O2 -g -Wall -Werror -o "$demo" "$RC_VARUNA_ROOT/src/tools/varuna_demo.c" \
    -lucp -lucs ||
    rc_varuna_fail "varuna_demo does not build against libucx-dev"
grep -qE "libucp\.so\.0 => $sysre/libucp\.so\.0" <(ldd "$demo") ||
    rc_varuna_fail "varuna_demo does not use $syslib/libucp.so.0"
demo_logs=$logs/demo
mkdir -p "$demo_logs"
# demo_run MODE: logs/demo/MODE-{server,client}.log, MODE.json
demo_run()
{
    local mode=$1 sdevs=softib0:2,softib1:2 cdevs=softib0:1,softib1:1
    local links=softib0:1 rounds=40000 port=$((20000 + RANDOM % 10000))
    local slog=$demo_logs/$mode-server.log clog=$demo_logs/$mode-client.log
    local env=(UCX_TLS=rc_varuna,ud_verbs:aux UCX_RC_VARUNA_STANDBY=auto
               UCX_LOG_LEVEL=info "UCX_RC_VARUNA_REPORT=$demo_logs/$mode.json")
    local server client

    rm -f "$demo_logs/$mode"-*.verdict
    if [[ $mode == lane ]]; then
        env+=(UCX_MAX_EAGER_LANES=2 UCX_MAX_RNDV_LANES=2
              "UCX_UCP_FAILOVER_REPORT=$demo_logs/$mode.json")
        sdevs=softib0:1,softib0:2 cdevs=softib0:1,softib0:2
        links="softib0:1 softib1:1"
    fi
    rm -f "$registry"
    "${sib_env[@]}" "${env[@]}" UCX_NET_DEVICES=$sdevs \
        VARUNA_VERDICT_FILE=${slog%.log}.verdict \
        timeout --kill-after=10 120 "$demo" server "$port" >"$slog" 2>&1 &
    server=$!
    for _ in $(seq 100); do
        grep -q listening "$slog" && break
        sleep 0.1
    done
    "${sib_env[@]}" "${env[@]}" UCX_NET_DEVICES=$cdevs \
        VARUNA_VERDICT_FILE=${clog%.log}.verdict \
        timeout --kill-after=10 120 "$demo" client 127.0.0.1 "$port" \
        "$rounds" >"$clog" 2>&1 &
    client=$!
    # the links go down 30 % through, through softib's control command
    down_at=$(SOFTIB=$RC_VARUNA_PREFIX/bin/softib SOFTIB_REGISTRY=$registry \
              scale_down_at $client "$clog" $((rounds * 30 / 100)) $links) &&
        echo "    link $links down at round $((rounds * 30 / 100)) of" \
             "$rounds" || down_at=
    demo_status=0
    wait $client || demo_status=$?
    wait $server || demo_status=$?
    rm -f "$registry"
    cat "${clog%.log}.verdict" "${slog%.log}.verdict" 2>/dev/null |
        cut -c1-150 | sed 's/^/    /'
    demo_detect "$clog"
}

# Did both sides of demo_run MODE say OK, in their verdict files? Prints
# what did not
demo_verdicts()
{
    rc_varuna_verdicts "$demo_logs/$1-client.verdict" client &&
        rc_varuna_verdicts "$demo_logs/$1-server.verdict" server
}

# How long the client took to see the failure: from just before softib's
# link down command to the client's first failover line (UCX's log stamps
# are wall-clock seconds); the packages and the module alone get their port
# events differently (docs/packages.md)
demo_detect()
{
    local first

    first=$(sed -n 's/^\[\([0-9.]*\)\].* rc_varuna: ep .*: failing over from.*/\1/p' \
            "$1" | head -n 1)
    [[ -n $first && -n ${down_at:-} ]] || return 0
    awk -v a="$down_at" -v b="$first" \
        'BEGIN { printf "    failure seen %.1f ms after the link down command\n", (b - a) * 1000 }'
}
demo_run varuna
((demo_status == 0)) && demo_verdicts varuna &&
    grep -q '"event":"failover"' "$demo_logs/varuna.json" ||
    rc_varuna_fail "varuna_demo with softib0:1 down (logs:" \
                   "${demo_logs#$RC_VARUNA_ROOT/})"
rc_varuna_pass "varuna_demo (built against libucx-dev), softib0:1 down: OK," \
               "nothing lost, nothing executed twice, rc_varuna failed over"
if ((module)); then
    echo "PASS: $rc_varuna_checks checks of the module alone in Debian's" \
         "UCX $version" \
         "with system paths only"
    exit 0
fi
demo_run lane
((demo_status == 0)) && demo_verdicts lane &&
    grep -q '"event":"lane_failover"' "$demo_logs/lane.json" ||
    rc_varuna_fail "varuna_demo, two lanes, both paths of one down (logs:" \
                   "${demo_logs#$RC_VARUNA_ROOT/})"
rc_varuna_pass "varuna_demo, two lanes, softib0:1 and its standby softib1:1" \
               "down: OK, UCP's lane failover (libucp) moved the lane"

echo "PASS: $rc_varuna_checks checks of the packages ($version) with" \
     "system paths only"
