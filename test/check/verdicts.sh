#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: a process's verdict missing, cut in two or WRONG fails its run,
# named, in rc_varuna_verdicts and in the runners of Open MPI, OpenSHMEM and
# the demo; clean runs pass (test/verdicts/run.sh)
#
exec bash "$(dirname "${BASH_SOURCE[0]}")/../verdicts/run.sh" "$@"
