#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# What test/mpi/run.sh (MPI) and test/mpi/shmem.sh (OpenSHMEM) share;
# sourced after contrib/common.sh.
#

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

# Build test/mpi/NAME.c with the compiler wrapper CC into build/mpi/NAME
# when its source changed; prints the program's path
mpi_build()
{
    local cc=$1 name=$2
    local src=$RC_VARUNA_ROOT/test/mpi/$name.c
    local prog=$RC_VARUNA_BUILD/mpi/$name

    if [[ ! -x $prog || $src -nt $prog ||
          $RC_VARUNA_ROOT/test/mpi/softib_link.h -nt $prog ]]; then
        mkdir -p "${prog%/*}"
        "$cc" -O2 -g -Wall -Werror -I"$RC_VARUNA_PREFIX/include" \
            -o "$prog" "$src" -L"$RC_VARUNA_PREFIX/lib" \
            -Wl,-rpath,"$RC_VARUNA_PREFIX/lib" -lsoftib >&2 ||
            rc_varuna_die "$cc $src failed"
    fi
    echo "$prog"
}
