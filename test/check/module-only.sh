#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: rc_varuna's module alone in Debian's unmodified UCX 1.13.1-1
# (contrib/module-build, then test/packages/check.sh --module): Debian's
# libucx0, ucx-utils and libucx-dev with the module preloaded and nothing
# of build/prefix on any path; ucx_info, Debian's mpirun and the failover
# demo through a link going down, exactly once. It installs Debian's
# packages that are missing and removes them again (root, apt-get), so it
# skips where it cannot, and where our own packages replace Debian's UCX.
#

set -uo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"

[[ $EUID -eq 0 ]] || rc_varuna_skip "installs Debian's UCX packages: needs root"
version=$(dpkg-query -W -f '${Version}' libucx0 2>/dev/null) || version=
[[ $version == *+varuna* ]] &&
    rc_varuna_skip "libucx0 $version is ours (contrib/debian-build): the" \
                   "module alone is for Debian's"
exec bash "$RC_VARUNA_ROOT/test/packages/check.sh" --module
