#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: every prototype in the transport's headers sits under the
# banner of the file that defines it. The headers group their prototypes in
# blocks, each opened by a comment naming a source file
# ("/* rc_varuna_lane.c: ... */"); a reader follows a call by that banner.
# Two reviews found prototypes under the wrong one (5, then 9), moved by
# hand each time: this keeps them right.
#
# For each header of src/uct/ib/varuna/ and src/ucp/failover/, it lists the function prototypes
# (a declaration at the start of a line, not static, not a macro), each with
# the banner above it, and finds the .c file of the same directory that
# defines the function (a definition at the start of a line). It fails when
# the two differ, when a prototype has no banner above it or no definition,
# and when one header opens two blocks for the same file.
#
# Usage: test/check/proto-banners.sh [DIR...]   (DIR: a directory of
# sources, by default src/uct/ib/varuna and src/ucp/failover of this
# tree; banners name rc_varuna_*.c or ucp_failover*.c files). Exit 0: every prototype is
# under its file's banner; 1: one is not (each named, with where it is
# defined); 77: DIR is missing.
#

set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
if (($# > 0)); then
    dirs=("$@")
else
    dirs=("$root/src/uct/ib/varuna" "$root/src/ucp/failover")
fi
for dir in "${dirs[@]}"; do
    if [[ ! -d $dir ]]; then
        echo "proto-banners: $dir is missing; skipped"
        exit 77
    fi
done

# The statements of a C file that start at column 0, one per output line:
# "LINE KIND NAME [BANNER]" where KIND is "proto" (ends in ';') or "def"
# (ends in '{'). Static ones, macros, typedefs and aggregates are left out.
statements()
{
    awk '
    function flush(text, end,    name) {
        if (text ~ /^(static|typedef|extern|struct|enum|union)[ \t]/ ||
            text ~ /^_Static_assert/ ||
            text ~ /^[A-Z_0-9]+[ \t]*\(/ || text !~ /\(/) {
            return
        }
        name = text
        sub(/[ \t]*\(.*/, "", name)
        sub(/.*[ \t*]/, "", name)
        if (name !~ /^[A-Za-z_][A-Za-z_0-9]*$/) {
            return
        }
        print start, (end == ";") ? "proto" : "def", name, banner
    }
    /^\/\* (rc_varuna_|ucp_failover)[a-z_]*\.c/ {
        banner = $2
        sub(/:$/, "", banner)
    }
    in_stmt {
        text = text " " $0
        if ($0 ~ /;[ \t]*$/ || $0 ~ /^\{/ || $0 ~ /\{[ \t]*$/) {
            flush(text, ($0 ~ /;[ \t]*$/) ? ";" : "{")
            in_stmt = 0
        }
        next
    }
    /^[A-Za-z_]/ {
        start = FNR
        text  = $0
        if ($0 ~ /;[ \t]*$/) {
            flush(text, ";")
        } else if ($0 ~ /\{[ \t]*$/) {
            flush(text, "{")
        } else {
            in_stmt = 1
        }
    }
    ' "$1"
}

status=0
fails=0
fail()
{
    echo "FAIL: $*"
    status=1
    fails=$((fails + 1))
}

check_dir()
{
    local dir=$1 hdr rel file lines line kind name banner def src count=0
    local fails_before=$fails
    declare -A defined_in
    for src in "$dir"/*.c; do
        while read -r _ kind name _; do
            [[ $kind == def ]] && defined_in[$name]=${src##*/}
        done < <(statements "$src")
    done

    for hdr in "$dir"/*.h; do
        rel=${hdr#$root/}
        # one block per file in a header
        while read -r file lines; do
            fail "$rel opens two blocks for $file (lines $lines): one per file"
        done < <(awk '/^\/\* (rc_varuna_|ucp_failover)[a-z_]*\.c/ {
                          f = $2; sub(/:$/, "", f)
                          at[f] = at[f] (at[f] == "" ? "" : ", ") FNR; n[f]++
                      }
                      END { for (f in n) if (n[f] > 1) print f, at[f] }' "$hdr")

        while read -r line kind name banner; do
            [[ $kind == proto ]] || continue
            count=$((count + 1))
            def=${defined_in[$name]:-}
            if [[ -z $def ]]; then
                fail "$rel:$line: $name() is declared but defined in no .c" \
                     "file of ${dir#$root/}"
            elif [[ -z $banner ]]; then
                fail "$rel:$line: $name() is under no file banner; it is" \
                     "defined in $def"
            elif [[ $banner != "$def" ]]; then
                fail "$rel:$line: $name() is under the $banner banner but" \
                     "defined in $def"
            fi
        done < <(statements "$hdr")
    done

    if ((count == 0)); then
        fail "no prototypes found in ${dir#$root/}/*.h"
    fi
    if ((fails == fails_before)); then
        echo "PASS: the $count prototypes of ${dir#$root/}/*.h are each under" \
             "the banner of the file that defines them"
    fi
}

for dir in "${dirs[@]}"; do
    check_dir "$dir"
done
exit $status
