#!/bin/bash
# make check: our gtest cases with the standby on the other port of the same device (see own-gtest.sh)
exec bash "$(dirname "${BASH_SOURCE[0]}")/own-gtest.sh" same "$@"
