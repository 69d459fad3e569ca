#!/bin/bash
# make check: ucx_perftest over rc_varuna (UCT) and rc_varuna,ud_verbs:aux
# (UCP) on softib, in both standby configurations
here=$(dirname "${BASH_SOURCE[0]}")
status=0
for standby in auto same; do
    echo "perftest: UCX_RC_VARUNA_STANDBY=$standby"
    UCX_RC_VARUNA_STANDBY=$standby bash "$here/../perftest/run.sh" \
        -x rc_varuna -u rc_varuna,ud_verbs:aux "$@" || status=$?
done
exit $status
