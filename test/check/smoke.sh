#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check, first: the install in the prefix is UCX 1.13.1 as we
# configure it, loads libuct_varuna and lists rc_varuna on softib, and has
# mlx5 as Debian's build (test/smoke/ucx-module.sh)
#
exec bash "$(dirname "${BASH_SOURCE[0]}")/../smoke/ucx-module.sh" "$@"
