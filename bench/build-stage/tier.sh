#!/bin/sh
# A tier of the benchmark: with REFERENCE_SHAPE=1 it first builds (as a workflow that runs
# `pip install -e` in its test job does), then "tests" for TEST_SECONDS while holding the card.
# Prints when the tests started and ended (bench/build-bench.py reads them from the log).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ "${REFERENCE_SHAPE:-0}" = 1 ]; then
  "$here/build.sh"
  lib=$HOME/build/obj/libtorch_bench.a
else
  lib=$CRCR_BUILD_DIR/obj/libtorch_bench.a
fi
echo "bench-test start=$(date +%s.%N)"
test -s "$lib"
sleep "${TEST_SECONDS:-3}"
echo "<testsuite><testcase classname=\"bench\" name=\"$CRCR_TIER\"/></testsuite>" > "$CRCR_JUNIT_DIR/r.xml"
echo "bench-test end=$(date +%s.%N)"
