#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# softib's benchmark figures (docs/benchmarks.md, "softib"): Debian's ib_write_bw at
# 64 KiB and ib_send_lat at 2 bytes, between two processes, softib0:1 to
# softib1:1, RUNS times each; prints every run and the medians. Not a test:
# run it by hand on an otherwise idle machine, after ". build/env.sh":
#   softib/test/bench.sh [RUNS]          (default 5)
#

set -uo pipefail

# shellcheck source=pair.sh
. "$(dirname "$0")/pair.sh"

runs=${1:-5}
bw=()
lat=()

median()
{
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
        END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

sib_setup softib-bench

for ((i = 1; i <= runs; i++)); do
    port=$(sib_free_port)
    sib_pair write_bw 120 "$port" \
        ib_write_bw -d softib0 -i 1 -p "$port" -F -s 65536 -n 20000 :: \
        ib_write_bw -d softib1 -i 1 -p "$port" -F -s 65536 -n 20000 \
        127.0.0.1 || exit 1
    # columns: bytes, iterations, peak, average MB/s (10^6 B/s), Mpps
    bw+=("$(awk '$1 == 65536 && $2 == 20000 { print $4 }' \
             "$sib_logs/write_bw.client")")

    port=$(sib_free_port)
    sib_pair send_lat 120 "$port" \
        ib_send_lat -d softib0 -i 1 -p "$port" -F -s 2 -n 20000 :: \
        ib_send_lat -d softib1 -i 1 -p "$port" -F -s 2 -n 20000 \
        127.0.0.1 || exit 1
    # columns: bytes, iterations, t_min, t_max, t_typical (the median), ...
    lat+=("$(awk '$1 == 2 && $2 == 20000 { print $5 }' \
              "$sib_logs/send_lat.client")")
    echo "run $i: ib_write_bw 64 KiB ${bw[-1]} MB/s," \
         "ib_send_lat median ${lat[-1]} us"
done

echo "median of $runs: ib_write_bw 64 KiB $(median "${bw[@]}") MB/s," \
     "ib_send_lat $(median "${lat[@]}") us"
