#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: the failover demo (contrib/demo) must come out right with
# rc_varuna's recovery and with UCP's lane failover: each run's client and
# server exit 0, say OK, and the run's report holds the failover it is
# about; the blanket half only illustrates
#
exec bash "$(dirname "${BASH_SOURCE[0]}")/../../contrib/demo" 20000
