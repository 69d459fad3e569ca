#!/bin/bash
# make check: the failover demo (contrib/demo) must come out right with
# rc_varuna's recovery; the blanket half only illustrates
exec bash "$(dirname "${BASH_SOURCE[0]}")/../../contrib/demo" 20000
