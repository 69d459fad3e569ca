#!/bin/bash
# make check: our gtest cases with the standby on the other port of the same
# device (see test/gtest/run-own.sh). On softib1 the two variants are
# softib0's again with the device renamed (both ports of one device, as on
# softib0), so make check runs softib0's: primary on port 1 and primary on
# port 2. All four: "test/gtest/run-own.sh same" (docs/testing.md, longer
# runs).
: "${GTEST_FILTER:=*test_rc_varuna*-rc_varuna/*/2:rc_varuna/*/3}"
export GTEST_FILTER
exec bash "$(dirname "${BASH_SOURCE[0]}")/../gtest/run-own.sh" same "$@"
