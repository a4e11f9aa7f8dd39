#!/usr/bin/env bash
# Selection and classification beside peers on the same input, in one run (issue 16;
# docs/performance.md). Usage: bench/run-match-peers.sh [BUILD_DIR] (default: build).
#   classification: bench_classify on a 64 MiB log with the default patterns, then GNU grep
#     (-E, C locale) and ripgrep, each asked for the first line matching any of the same
#     patterns in the same log (a file in the page cache; crcrd's log is in memory).
#   selection: bench_selection (3,000 paths x 600 globs), then git check-ignore with the same
#     globs as exclude patterns on the same paths (same meaning of *, ? and ** for these globs;
#     git only looks for the last matching pattern of each path, and its time includes start-up).
set -euo pipefail
build=${1:-build}
reps=${REPS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The median wall time, in ms, of `reps` runs of the command.
median_ms() {
    local times=()
    for ((i = 0; i < reps; i++)); do
        local t0 t1
        t0=$(date +%s%N)
        "$@" >/dev/null 2>&1 || true
        t1=$(date +%s%N)
        times+=($(((t1 - t0) / 1000)))
    done
    printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f ms", a[int((NR+1)/2)]/1000}'
}

"$build/bench/bench_classify" "$reps" 64 "$work"
echo "peer: grep -E -m1 -f patterns (LC_ALL=C): $(LC_ALL=C median_ms grep -E -m1 -n -f "$work/patterns" "$work/log")"
if command -v rg >/dev/null; then
    echo "peer: rg -m1 -f patterns: $(median_ms rg -m1 -n -f "$work/patterns" "$work/log")"
fi

"$build/bench/bench_selection" 100 "$work"
git init -q "$work/repo"
cp "$work/globs" "$work/repo/.git/info/exclude"
check() { git -C "$work/repo" check-ignore --no-index --stdin -v -n <"$1"; }
echo "peer: git check-ignore --no-index --stdin -v -n, 3000 paths: $(median_ms check "$work/paths")"
: >"$work/none"
echo "peer: the same with no paths (git's start-up and exclude parsing): $(median_ms check "$work/none")"
echo "git matched $(check "$work/paths" | grep -vc '^::') of $(wc -l <"$work/paths") paths"
