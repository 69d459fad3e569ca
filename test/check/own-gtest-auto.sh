#!/bin/bash
# make check: our gtest cases with the standby on another device
# (see test/gtest/run-own.sh)
exec bash "$(dirname "${BASH_SOURCE[0]}")/../gtest/run-own.sh" auto "$@"
