#!/bin/sh
# The benchmark's build of its generated upstream (bench/run-build-bench.sh): make -j of every
# C++ file into $OUT/obj and a library, with ccache. Incremental from a nearest build
# ($CRCR_BUILD_NEAREST): its objects are copied, those whose source changed (by content:
# manifest.sha1) are removed, and make rebuilds only them. OUT is $CRCR_BUILD_OUT (the build
# stage) or $HOME/build (the reference shape, where each tier's command builds first).
set -eu
src=$CRCR_PYTORCH_DIR
out=${CRCR_BUILD_OUT:-$HOME/build}
mkdir -p "$out"
start=$(date +%s.%N)
(cd "$src" && find aten -name '*.cpp' | sort | xargs sha1sum) > "$out/manifest.sha1"
mode=cold
if [ -n "${CRCR_BUILD_NEAREST:-}" ] && [ -d "$CRCR_BUILD_NEAREST/obj" ]; then
  mode=incremental
  cp -r "$CRCR_BUILD_NEAREST/obj" "$out/obj"
  # Fresh times for what is copied (newer than the checkout), then drop what changed.
  find "$out/obj" -type f -exec touch {} +
  diff "$CRCR_BUILD_NEAREST/manifest.sha1" "$out/manifest.sha1" | sed -n 's/^> [0-9a-f]*  //p' |
    while IFS= read -r f; do rm -f "$out/obj/${f%.cpp}.o"; done
  rm -f "$out/obj/libtorch_bench.a"
fi
export CXX="ccache g++"
make -s -f "$src/Makefile" SRC="$src" OBJ="$out/obj" -j "${BUILD_JOBS:-2}"
end=$(date +%s.%N)
echo "bench-build mode=$mode seconds=$(awk "BEGIN { print $end - $start }")"
