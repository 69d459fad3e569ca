#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: 256 endpoints of one client through a port failure, in both
# standby configurations, exactly once and no hang (test/scale/run.sh)
#
exec bash "$(dirname "${BASH_SOURCE[0]}")/../scale/run.sh" "$@"
