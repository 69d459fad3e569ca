#!/bin/bash
# make check: UCX's own gtest suites of group rc_verbs-uct, quick, on one port
# (each UCT test runs once per port; the four-port run is
# "test/gtest/run-ucx-suites.sh rc_verbs-uct", see test/gtest/run-ucx-suites.sh)
exec bash "$(dirname "${BASH_SOURCE[0]}")/../gtest/run-ucx-suites.sh" -q -d softib0:1 rc_verbs-uct "$@"
