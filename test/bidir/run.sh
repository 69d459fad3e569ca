#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# Traffic in both directions through link failures (issue 14): two
# processes on softib run varuna_bidir (src/tools/varuna_bidir.c), a UCP
# program shaped like an MPI job (tag messages both ways on one worker,
# fetch-adds, puts and flushes both ways on another, several endpoints per
# worker), over UCX_TLS=rc_varuna,ud_verbs:aux. At each of its fail points
# the client's active link goes down and comes back: the primary's first,
# then the standby's (the active lane by then), and so on, so every
# failure after the first needs the re-protection of the one before.
#
# Usage: test/bidir/run.sh [-r RUNS] [-i ITERS] [-e EPS] [-c FAILURES]
#                          [-p] [-s auto|same] [-b] [-t SECONDS] [-a ARGS]
#                          [-n NAME] [-k] [-w SEC] [-x SEC] [-N] [-L]
#   -p   the client pauses at each fail point until the link is back: the
#        link fails with everything acknowledged (the state of issue 14)
#   -b   blanket recovery (expect duplicates, reported, not a failure)
#   -L   before each failure the client's active link loses every
#        response, both ways, for 30 ms: what either side sends meanwhile
#        executes unconfirmed, so a failure usually finds executed
#        operations in flight (not always: test/bidir/blanket.sh)
#   -a   more varuna_bidir options for both sides (e.g. "-S 64": no
#        rendezvous, only eager messages)
#   -n   logs go to build/logs/bidir/NAME (default: the options)
#   -k   the link of the last failure stays down (no heal)
#   -w S the client idles S seconds after the last failure, progressing,
#        then goes on: timers of the failed port have their chance
#   -x S after the last failure the server is killed: each of the client's
#        endpoints must report the dead peer, once, within S seconds
#   -N   a second client, a new process on the same ports, connects to the
#        same server after the first is done (with -k: while the link of
#        the last failure is still down) and must come out right too. With
#        -k it is given that link as its standby (UCX_RC_VARUNA_STANDBY):
#        halfway through, the link comes back, the second client's
#        endpoints must gain their standby lane (re-protection), and then
#        its primary link goes down: it must fail over onto that lane
#
# A run passes when both sides print OK (every message once with its
# pattern, fetch-add results exactly 0, 1, 2, ..., counters and slots
# exact, no endpoint error), exit 0 within the timeout (else: HANG), and
# every failure produced failover reports. Prints one line per run and a
# closing "N passed, N failed" line.
#

set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"

runs=3 iters=4000 eps=2 fails=1 pause= standby=auto recovery=varuna tmo=120
args= name= keep_down=0 idle= kill_after= clients=1 ack_loss=0
while getopts "r:i:e:c:ps:bt:a:n:kw:x:NL" opt; do
    case $opt in
    r) runs=$OPTARG ;;
    i) iters=$OPTARG ;;
    e) eps=$OPTARG ;;
    c) fails=$OPTARG ;;
    p) pause=-p ;;
    s) standby=$OPTARG ;;
    b) recovery=blanket ;;
    t) tmo=$OPTARG ;;
    a) args=$OPTARG ;;
    n) name=$OPTARG ;;
    k) keep_down=1 ;;
    L) ack_loss=1 ;;
    w) idle=$OPTARG ;;
    x) kill_after=$OPTARG ;;
    N) clients=2 ;;
    *) rc_varuna_usage; exit 2 ;;
    esac
done

rc_varuna_use_build softib varuna_bidir

# the client's lanes, and the server's on other ports
case $standby in
auto) cdev=softib0:1 sdev=softib0:2 links=(softib0:1 softib1:1) ;;
same) cdev=softib0:1 sdev=softib1:1 links=(softib0:1 softib0:2) ;;
*)    rc_varuna_die "-s: auto or same, not '$standby'" ;;
esac

export UCX_TLS=rc_varuna,ud_verbs:aux
export UCX_RC_VARUNA_STANDBY=$standby
export UCX_RC_VARUNA_RECOVERY=$recovery
export UCX_LOG_LEVEL=${UCX_LOG_LEVEL:-info}
rc_varuna_softib_registry bidir

: "${name:=$standby-$recovery-c$fails${pause:+-paused}}"
logs=$RC_VARUNA_LOGS/bidir/$name
mkdir -p "$logs"

fail_points()
{
    local k list=

    for ((k = 1; k <= fails; k++)); do
        list+=${list:+,}$((iters * k / (fails + 1)))
    done
    echo "$list"
}

# one run; prints its verdict line, returns 0 if it passed
bidir_run()
{
    local n=$1 d=$logs/run$1 port=$((20000 + ($$ + $1) % 20000))
    local server client k link rs rc verdict reports rule names name problems
    local whos

    rm -rf "$d"
    mkdir -p "$d"
    softib reset >/dev/null
    export UCX_RC_VARUNA_REPORT=$d/report.json

    UCX_NET_DEVICES=$sdev VARUNA_VERDICT_FILE=$d/server.verdict \
        timeout "$tmo" softib run -- varuna_bidir server "$port" -i "$iters" -e "$eps" -n $clients $args \
        >"$d/server.log" 2>&1 &
    server=$!
    for _ in $(seq 100); do
        grep -q listening "$d/server.log" && break
        sleep 0.1
    done
    UCX_NET_DEVICES=$cdev VARUNA_VERDICT_FILE=$d/client.verdict \
        timeout "$tmo" softib run -- varuna_bidir client 127.0.0.1 "$port" -i "$iters" -e "$eps" $args \
        -f "$(fail_points)" -m "$d/fail" $pause ${idle:+-w $idle} \
        ${kill_after:+-K $kill_after} >"$d/client.log" 2>&1 &
    client=$!

    # failure k takes down the client's active link: the primary's port
    # first, then the standby's, alternately; it comes back 0.2 s later,
    # and the client (with -p) goes on 0.5 s after that, once both sides
    # had time to re-protect (UCX_RC_VARUNA_REPROTECT_INTERVAL is 20 ms)
    for ((k = 1; k <= fails; k++)); do
        while [[ ! -e $d/fail.$k ]] && kill -0 $client 2>/dev/null; do
            sleep 0.01
        done
        [[ -e $d/fail.$k ]] || break
        link=${links[$(((k - 1) % 2))]}
        if ((ack_loss)); then
            rule=$(softib drop "$link" --dir any --class resp)
            sleep 0.03
        fi
        softib link down "$link" >/dev/null
        if ((ack_loss)); then
            softib undo "$rule" >/dev/null
        fi
        echo "failure $k: $link down" >>"$d/faults.log"
        sleep 0.2
        if ((k < fails || !keep_down)); then
            softib link up "$link" >/dev/null
        fi
        sleep 0.5
        touch "$d/fail.$k.done"
    done
    if [[ -n $kill_after && -e $d/fail.$fails ]]; then
        pkill -KILL -f "varuna_bidir server $port " &&
            echo "server killed" >>"$d/faults.log"
    fi

    wait $client
    rc=$?
    if ((clients > 1 && rc == 0)); then
        # a new process sees only the ports that are up: it is given both
        # of the client's, as a user would
        client2_env=(UCX_NET_DEVICES=$cdev,${links[1]}
                     VARUNA_VERDICT_FILE=$d/client2.verdict)
        client2_args=()
        if ((keep_down)); then
            client2_env+=(UCX_RC_VARUNA_STANDBY=${links[0]})
            client2_args=(-f $((iters / 2)) -m "$d/fail2" -p)
        fi
        # line-buffered: the runner reads its log while it runs
        env "${client2_env[@]}" stdbuf -oL timeout "$tmo" softib run -- \
            varuna_bidir client 127.0.0.1 "$port" -i "$iters" -e "$eps" \
            $args "${client2_args[@]}" >"$d/client2.log" 2>&1 &
        client=$!
        if ((keep_down)); then
            while [[ ! -e $d/fail2.1 ]] && kill -0 $client 2>/dev/null; do
                sleep 0.01
            done
            if [[ -e $d/fail2.1 ]]; then
                softib link up "${links[0]}" >/dev/null
                echo "client 2: ${links[0]} up $(date +%s.%N)" >>"$d/faults.log"
                # its endpoints gain their standby lane on it
                for _ in $(seq 100); do
                    (($(grep -c 'is the standby again' "$d/client2.log") >=
                      eps * 2)) && break
                    sleep 0.05
                done
                softib link down "${links[1]}" >/dev/null
                echo "client 2: ${links[1]} down $(date +%s.%N)" >>"$d/faults.log"
                sleep 0.2
                touch "$d/fail2.1.done"
            fi
        fi
        wait $client
        rc=$?
    fi
    { wait $server; } 2>/dev/null
    rs=$?
    for link in "${links[@]}"; do
        softib link up "$link" >/dev/null
    done

    reports=0
    [[ -f $d/report.json ]] && reports=$(grep -c '"event":"failover"' \
                                         "$d/report.json")
    # a killed server exits with 137
    [[ -n $kill_after ]] && ((rs == 137)) && rs=0
    # each process's verdict, from the file it wrote it to (a killed server
    # writes none)
    # (the server's for client k is "server k" from 2 on)
    names=(client)
    ((clients > 1 && rc == 0)) && names+=(client2)
    [[ -n $kill_after ]] || names+=(server)
    problems=$(for name in "${names[@]}"; do
                   whos=("${name%2}")
                   if [[ $name == server ]]; then
                       for ((k = 2; k <= clients; k++)); do
                           whos+=("server $k")
                       done
                   fi
                   rc_varuna_verdicts "$d/$name.verdict" "${whos[@]}" |
                       sed "s/^/$name.verdict: /"
               done | cut -c1-200 | paste -sd';' -)
    if ((rc == 124 || rs == 124)); then
        verdict="HANG (client exit $rc, server exit $rs)"
    elif ((rc != 0 || rs != 0)); then
        verdict="WRONG (client exit $rc, server exit $rs)${problems:+: $problems}"
    elif [[ -n $problems ]]; then
        verdict="WRONG: $problems"
    elif ((reports < fails)); then
        verdict="WRONG: $reports failover reports for $fails failures"
    elif ((clients > 1 && keep_down)) &&
         ! grep -q 'is the standby again' "$d/client2.log"; then
        verdict="WRONG: client 2 never gained a standby lane"
    elif ((clients > 1 && keep_down)) &&
         ! grep -q 'failing over' "$d/client2.log"; then
        verdict="WRONG: client 2 did not fail over onto its new standby"
    else
        verdict="OK"
    fi
    echo "run $n: $verdict; $reports failover reports; $(cat "$d"/*.verdict \
          2>/dev/null | cut -d: -f1,2 | paste -sd' ')"
    [[ $verdict == OK ]]
}

passed=0 failed=0
echo "bidir: $runs runs, $iters iterations, $eps endpoints per worker," \
     "$fails failures${pause:+ (paused)}, standby $standby, $recovery;" \
     "logs in ${logs#$RC_VARUNA_ROOT/}"
for ((n = 1; n <= runs; n++)); do
    if bidir_run $n; then
        ((passed++))
    else
        ((failed++))
    fi
done
echo "bidir: $passed passed, $failed failed"
((failed == 0))
