#!/bin/bash
# make check: our gtest cases with the standby on another device (see own-gtest.sh)
exec bash "$(dirname "${BASH_SOURCE[0]}")/own-gtest.sh" auto "$@"
