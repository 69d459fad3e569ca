#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: docs/rc_varuna.7.md lists exactly the runtime parameters that
# ucx_info of the build registers, and no page names one it does not
# (test/params/documented.sh)
#
exec bash "$(dirname "${BASH_SOURCE[0]}")/../params/documented.sh" "$@"
