#!/bin/bash
# make check: UCX's own gtest suites of group rc_varuna-uct, quick (see
# test/gtest/run-ucx-suites.sh)
exec bash "$(dirname "${BASH_SOURCE[0]}")/../gtest/run-ucx-suites.sh" -q rc_varuna-uct "$@"
