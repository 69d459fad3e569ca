#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: the demo's third scenario (two UCP lanes, both paths of the
# first die, UCP's lane failover moves the traffic) 20 times in a row, every
# run checked for duplicates, losses, exit codes and the lane failover in
# its report. A fault that shows in a few runs of a hundred (issue 34,
# NEWS.md) passes one run by chance, not 20 in a row. The long loop is
# contrib/demo --loop lane 200 (docs/testing.md, "Longer runs").
#
exec bash "$(dirname "${BASH_SOURCE[0]}")/../../contrib/demo" --loop lane \
    "${DEMO_LANE_RUNS:-20}"
