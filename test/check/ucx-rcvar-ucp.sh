#!/bin/bash
# make check: UCX's own gtest suites of group rcvar-ucp, quick (see
# test/gtest/run-ucx-suites.sh)
exec bash "$(dirname "${BASH_SOURCE[0]}")/../gtest/run-ucx-suites.sh" -q rcvar-ucp "$@"
