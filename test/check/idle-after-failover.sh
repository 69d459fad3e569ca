#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: an idle client in UCP's wakeup mode, its link down for good
# after a failover, spends at most 1 % of a core (test/idle/run.sh)
#
exec bash "$(dirname "${BASH_SOURCE[0]}")/../idle/run.sh" "$@"
