#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: every UCX_UCP_FAILOVER_* parameter fed its bad values gives one
# clear error that says the lane failover is off; good values none
# (test/params/ucp-failover-values.sh)
#
exec bash "$(dirname "${BASH_SOURCE[0]}")/../params/ucp-failover-values.sh" \
    "$@"
