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
# For each header of src/uct/ib/varuna/, it lists the function prototypes
# (a declaration at the start of a line, not static, not a macro), each with
# the banner above it, and finds the .c file of the same directory that
# defines the function (a definition at the start of a line). It fails when
# the two differ, when a prototype has no banner above it or no definition,
# and when one header opens two blocks for the same file.
#
# Usage: test/check/proto-banners.sh [DIR]   (DIR: the transport's sources,
# by default src/uct/ib/varuna of this tree). Exit 0: every prototype is
# under its file's banner; 1: one is not (each named, with where it is
# defined); 77: DIR is missing.
#

set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
dir=${1:-$root/src/uct/ib/varuna}

if [[ ! -d $dir ]]; then
    echo "proto-banners: $dir is missing; skipped"
    exit 77
fi

# The statements of a C file that start at column 0, one per output line:
# "LINE KIND NAME [BANNER]" where KIND is "proto" (ends in ';') or "def"
# (ends in '{'). Static ones, macros, typedefs and aggregates are left out.
statements()
{
    awk '
    function flush(text, end,    name) {
        if (text ~ /^(static|typedef|extern|struct|enum|union)[ \t]/ ||
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
    /^\/\* rc_varuna_[a-z_]+\.c/ {
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

declare -A defined_in
for src in "$dir"/*.c; do
    while read -r _ kind name _; do
        [[ $kind == def ]] && defined_in[$name]=${src##*/}
    done < <(statements "$src")
done

status=0
count=0
fail()
{
    echo "FAIL: $*"
    status=1
}

for hdr in "$dir"/*.h; do
    rel=${hdr#$root/}
    # one block per file in a header
    while read -r file lines; do
        fail "$rel opens two blocks for $file (lines $lines): one per file"
    done < <(awk '/^\/\* rc_varuna_[a-z_]+\.c/ {
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
if ((status == 0)); then
    echo "PASS: the $count prototypes of ${dir#$root/}/*.h are each under" \
         "the banner of the file that defines them"
fi
exit $status
