#!/bin/sh
# The demo's CI script, shaped like a backend's: it reads the tests crcrd selected from
# $CRCR_TESTS_FILE, runs those that exist in this demo suite with pytest, and writes JUnit
# into $CRCR_JUNIT_DIR. Entries of the real PyTorch checkout (${PYTORCH_DIR}/...) are
# skipped here: the demo has no checkout.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
echo "crcrd demo: tier=$CRCR_TIER run=$CRCR_RUN_ID job=$CRCR_JOB_ID attempt=$CRCR_ATTEMPT slot=$CRCR_SLOT sha=$CRCR_PYTORCH_SHA"
set --
# The rerun of a failed tier (CRCR_RERUN_FILE, JUnit ids "path/file.py::test" when pytest
# wrote the file, else "module.path::test" or "module.path.Class::test"): only those tests, as
# pytest node ids.
if [ -n "${CRCR_RERUN_FILE:-}" ] && [ -s "$CRCR_RERUN_FILE" ]; then
  echo "rerun of the failed tests only: $(tr '\n' ' ' < "$CRCR_RERUN_FILE")"
  while IFS= read -r id; do
    cls=${id%%::*}; name=${id#*::}
    if [ -f "$cls" ]; then set -- "$@" "$id"; continue; fi
    file=$(printf '%s' "$cls" | tr . /).py
    if [ -e "$file" ]; then set -- "$@" "$file::$name"; continue; fi
    file=$(printf '%s' "${cls%.*}" | tr . /).py
    if [ -e "$file" ]; then set -- "$@" "$file::${cls##*.}::$name"; else echo "skipping $id (not in the demo suite)"; fi
  done < "$CRCR_RERUN_FILE"
  [ $# -gt 0 ] && exec /usr/bin/python3 -m pytest -q -p no:cacheprovider -o junit_family=xunit1 \
    --junitxml="$CRCR_JUNIT_DIR/results.xml" "$@"
fi
while IFS= read -r t; do
  [ -n "$t" ] || continue
  if [ -e "${t%%::*}" ]; then set -- "$@" "$t"; else echo "skipping $t (not in the demo suite)"; fi
done < "$CRCR_TESTS_FILE"
if [ $# -eq 0 ]; then
  echo "nothing from this tier is in the demo suite"
  exit 0
fi
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider -o junit_family=xunit1 \
  --junitxml="$CRCR_JUNIT_DIR/results.xml" "$@"
