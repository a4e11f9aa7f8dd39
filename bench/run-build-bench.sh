#!/usr/bin/env bash
# The build stage against the reference shape (docs/performance.md, "Building once, on CPU"):
# a generated PyTorch-like upstream of FILES C++ files (bench/build-stage/gen-upstream.py), a
# stream of COMMITS upstream commits (pushes to main and PR syncs), three tiers each, two
# device slots. Shape "build stage": crcrd's build: section, one build slot, the build
# (bench/build-stage/build.sh: make -j with ccache, incremental from CRCR_BUILD_NEAREST) once
# per SHA, the tiers only test. Shape "reference": no build: section; each tier's command
# builds first (the same build.sh into its job folder, with its own ccache), holding its card,
# then tests. Same commits, same commands, same TEST_SECONDS of testing per tier. Then, for
# each, a PR sync of an already built commit: webhook to the first test's start.
#
# usage: bench/run-build-bench.sh CRCRD
#   env: FILES (5000), COMMITS (20), EDITS (5 files per commit), TEST_SECONDS (3), GAP (10 s
#        between deliveries), KEEP (keep the work folder)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "$1")
files=${FILES:-5000}
commits=${COMMITS:-20}
edits=${EDITS:-5}
test_seconds=${TEST_SECONDS:-3}
gap=${GAP:-10}
work=$(mktemp -d /tmp/crcrd-build-bench-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
cd "$work"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext "subjectAltName=IP:127.0.0.1" -keyout tls.key -out tls.crt 2>/dev/null
echo -n bench-secret > webhook.secret
python3 "$root/bench/build-stage/gen-upstream.py" upstream "$files" "$commits" "$edits" > shas.txt
cat > selection.yaml <<'RULES'
tiers:
  - {name: import, always: true, tests: [a]}
  - {name: smoke, always: true, tests: [b]}
  - {name: affected, always: true, tests: [c]}
rules: []
unmatched: nothing
RULES
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 200); do (echo > /dev/tcp/127.0.0.1/$1) 2>/dev/null && return; sleep 0.05; done; echo "port $1 never opened" >&2; exit 1; }

# run_one NAME REFERENCE(0|1)
run_one() {
  local name=$1 reference=$2 dir="$work/$1" port
  mkdir -p "$dir/state" "$dir/ccache"
  port=$(free_port)
  local build="" env="{TEST_SECONDS: \"$test_seconds\", BUILD_JOBS: \"2\"}"
  if [[ $reference == 1 ]]; then
    env="{TEST_SECONDS: \"$test_seconds\", BUILD_JOBS: \"2\", REFERENCE_SHAPE: \"1\", CCACHE_DIR: $dir/ccache}"
  else
    build="build: {command: [$root/bench/build-stage/build.sh], cache_dir: $dir/state/builds, slots: 1, timeout: 1h, stall_timeout: 10m, ccache: {dir: $dir/ccache, max_size: 2GiB}}"
  fi
  cat > "$dir/crcrd.yaml" <<CONF
log_level: warn
server: {listen: "127.0.0.1:$port", tls: {cert: $work/tls.crt, key: $work/tls.key}}
storage: {path: $dir/state/crcrd.db}
ingest: {secrets: [{id: bench, file: $work/webhook.secret}]}
trust: {downstream_repo: torch-spyre/torch-spyre, fork_labels: [ciflow/crcr/spyre]}
upstream: {mirror: $dir/state/pytorch.git, remote: $work/upstream}
selection: {rules: $work/selection.yaml, concurrency: {pull_request: none, push: none}}
runners: [{name: card-0}, {name: card-1}]
execution: {command: [$root/bench/build-stage/tier.sh], work_root: $dir/state/work, isolation: none, min_free_bytes: 1MiB, device_wait: 2h, env: $env}
$build
CONF
  "$bin" --config "$dir/crcrd.yaml" 2> "$dir/crcrd.log" &
  local daemon=$!
  wait_port "$port"
  echo "== $name"
  python3 "$root/bench/build-stage/bench.py" post "$port" tls.crt webhook.secret shas.txt "$gap" "$dir/posted.json"
  python3 "$root/bench/build-stage/bench.py" wait "$dir"
  # A PR sync of a commit already built (or, for the reference, whose tests built it before).
  python3 "$root/bench/build-stage/bench.py" warm "$port" tls.crt webhook.secret shas.txt "$dir/warm.json"
  python3 "$root/bench/build-stage/bench.py" wait "$dir"
  kill "$daemon"
  wait "$daemon" || true
  python3 "$root/bench/build-stage/bench.py" measure "$dir" "$name" > "$dir/metrics.json"
}

echo "build bench: $files C++ files, $commits commits of $edits changed files, 3 tiers of ${test_seconds}s, 2 device slots"
run_one stage 0
run_one reference 1
echo
python3 "$root/bench/build-stage/bench.py" table "$work/stage/metrics.json" "$work/reference/metrics.json"
echo "work folder: $work"
