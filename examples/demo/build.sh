#!/bin/sh
# The demo's build (docs/build.md), shaped like a backend's: it compiles the backend's C++
# extension (ext/demo_ext.cpp) against a header of the pinned upstream checkout
# ($CRCR_PYTORCH_DIR/aten/src/ATen/demo/add.h) into $CRCR_BUILD_OUT, with ccache when it is
# installed. crcrd runs it once per upstream SHA on a CPU build slot; the tiers get the result
# as $CRCR_BUILD_DIR (tests/test_import.py loads it).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
echo "crcrd demo build: sha=$CRCR_PYTORCH_SHA out=$CRCR_BUILD_OUT nearest=${CRCR_BUILD_NEAREST:-none}"
set -- g++
if command -v ccache >/dev/null 2>&1; then set -- ccache g++; fi
"$@" -O1 -shared -fPIC -I"$CRCR_PYTORCH_DIR/aten/src" "$here/ext/demo_ext.cpp" \
  -o "$CRCR_BUILD_OUT/libdemo_ext.so"
echo "$CRCR_PYTORCH_SHA" > "$CRCR_BUILD_OUT/built-at"
echo "crcrd demo build: libdemo_ext.so built"
