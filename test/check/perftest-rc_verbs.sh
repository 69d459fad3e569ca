#!/bin/bash
# make check: ucx_perftest over rc_verbs (UCT) and rc_v (UCP) on softib
exec bash "$(dirname "${BASH_SOURCE[0]}")/../perftest/run.sh" -x rc_verbs -u rc_v "$@"
