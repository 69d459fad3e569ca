#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: the Debian packages of UCX with rc_varuna (contrib/debian-build)
# installed in place of Debian's UCX and used with system paths only, then
# Debian's put back (test/packages/check.sh): ucx_info, mlx5 as Debian's,
# Debian's mpirun and the failover demo through a link failure, exactly once.
#
# The packages are built from Debian's source package as Debian builds it,
# a build of UCX of its own (Debian's configuration: no trace log levels,
# static libraries too). "contrib/quickstart check" starts it beside make
# check as a background job at the lowest CPU priority (contrib/debian-build
# background: SCHED_IDLE, a core only when no test wants it), so that it
# costs the run little time; this runner waits for that build. Without one
# (make check by hand) it builds the packages itself first, about 3 minutes.
#

set -uo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"

# (a skip fails a CI run: contrib/common.sh, rc_varuna_skip)
[[ $EUID -eq 0 ]] ||
    rc_varuna_skip "packages: installs packages into the system: needs root"
"$RC_VARUNA_ROOT/contrib/debian-build" wait || exit 1
exec bash "$RC_VARUNA_ROOT/test/packages/check.sh"
