#!/usr/bin/env bash
# Reporting in a busy hour (docs/performance.md): PyTorch's busiest hour replayed at SCALE times
# its speed against a stand-in GitHub that enforces the secondary limit on content-creating
# requests (80 a minute, 500 an hour, both spans divided by SCALE) and answers 403 "secondary
# rate limit" with Retry-After beyond it (bench/github-budget-standin.py), and a stand-in relay.
# Two daemons, one after the other, each on a fresh state folder and a fresh stand-in: OLD
# (the FIFO sender of 2cbc3a6) and NEW (one lane per sink, with report.github.budget and the
# relay's budget scaled by SCALE). report.min_interval is 1 s / SCALE for both.
#
# Workload: PRS pull_request syncs and PUSHES trunk pushes (relay dispatches, each its own SHA
# and PR), evenly over the compressed hour; three tiers a run, each a script of JOB_SECONDS;
# SLOTS runner slots. Drain: after the last run ended, until nothing is waiting in the outbox or
# one compressed hour has passed, whichever comes first; what has not reached GitHub by then is
# lost. The daemon is pinned to CPU 0, the stand-in and the load to CPU 1 (taskset).
#
# usage: bench/run-busy-hour-bench.sh OLD_CRCRD NEW_CRCRD
#   env: SCALE (10), PRS (150), PUSHES (30), SLOTS (4), JOB_SECONDS (0.5), KEEP (keep the folder)
# Build OLD_CRCRD: git worktree add /work/bench-old 2cbc3a6 && cmake -S /work/bench-old
#   -B /work/bench-old/build -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build
#   /work/bench-old/build --target crcrd
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
old=$(realpath "$1")
new=$(realpath "$2")
scale=${SCALE:-10}
prs=${PRS:-150}
pushes=${PUSHES:-30}
slots=${SLOTS:-4}
job_seconds=${JOB_SECONDS:-0.5}
prefix=crcr/spyre
work=$(mktemp -d /tmp/crcrd-busy-hour-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
cd "$work"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext "subjectAltName=IP:127.0.0.1" -keyout tls.key -out tls.crt 2>/dev/null
echo -n bench-secret > webhook.secret
echo ghp_bench > gh.token
echo relay-oidc-token > relay.token
mkdir ci
printf '#!/bin/sh\nsleep %s\nprintf %s > "$CRCR_JUNIT_DIR/r.xml"\n' "$job_seconds" \
  "'<testsuite tests=\"1\"><testcase classname=\"ci\" name=\"ok\"/></testsuite>'" > ci/ci.sh
chmod +x ci/ci.sh
cat > selection.yaml <<'RULES'
tiers:
  - {name: import, always: true, tests: [ok_import]}
  - {name: smoke, always: true, tests: [ok_smoke]}
  - {name: affected, always: true, tests: [ok_affected]}
rules: []
unmatched: nothing
RULES
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 200); do (echo > /dev/tcp/127.0.0.1/$1) 2>/dev/null && return; sleep 0.05; done; echo "port $1 never opened" >&2; exit 1; }
# Seconds to a duration in milliseconds for the configuration.
ms() { python3 -c "print(f'{round($1 * 1000 / $scale)}ms')"; }

# run_one NAME LABEL BINARY BUDGETED(0|1)
run_one() {
  local label=$2 bin=$3 budgeted=$4 dir="$work/$1"
  mkdir -p "$dir/state"
  local gport port
  gport=$(free_port)
  port=$(free_port)
  taskset -c 1 python3 "$root/bench/github-budget-standin.py" "$gport" tls.crt tls.key "$dir/standin.log" "$scale" &
  local standin=$!
  wait_port "$gport"
  local gh_budget="" cb_budget=""
  if [[ $budgeted == 1 ]]; then
    gh_budget=", budget: [{requests: 80, per: $(ms 60)}, {requests: 500, per: $(ms 3600)}]"
    cb_budget=", budget: [{requests: 100, per: $(ms 60)}]"
  fi
  cat > "$dir/crcrd.yaml" <<CONF
log_level: warn
server: {listen: "127.0.0.1:$port", tls: {cert: $work/tls.crt, key: $work/tls.key}}
storage: {path: $dir/state/crcrd.db}
ingest: {secrets: [{id: bench, file: $work/webhook.secret}]}
trust: {downstream_repo: torch-spyre/torch-spyre, fork_labels: [ciflow/crcr/spyre]}
selection: {rules: $work/selection.yaml, concurrency: {pull_request: none, push: none}}
runners: [$(for i in $(seq 0 $((slots - 1))); do printf '{name: sim-%d, labels: [sim], health_check: [/bin/true]}, ' "$i"; done)]
execution: {command: [$work/ci/ci.sh], work_root: $dir/state/work, isolation: none, min_free_bytes: 1MiB}
report:
  min_interval: $(ms 1)
  file: $dir/report.jsonl
  github: {api_url: "https://127.0.0.1:$gport", repo: pytorch/pytorch, token_file: $work/gh.token, ca_file: $work/tls.crt, context_prefix: $prefix$gh_budget}
  crcr_callback: {url: "https://127.0.0.1:$gport/relay/callback", token_file: $work/relay.token, ca_file: $work/tls.crt$cb_budget}
CONF
  touch "$dir/report.jsonl"
  taskset -c 0 "$bin" --config "$dir/crcrd.yaml" 2> "$dir/crcrd.log" &
  local daemon=$!
  wait_port "$port"
  echo "== $label: $bin"
  taskset -c 1 python3 "$root/bench/busy-hour.py" post "$port" tls.crt webhook.secret \
    "$root/tests/fixtures/crcr" "$scale" "$prs" "$pushes"
  # Every run ends (a minute at most), then the drain.
  for _ in $(seq 600); do
    [[ $(sqlite3 "$dir/state/crcrd.db" "SELECT count(*) FROM runs WHERE state IN ('queued','running')") == 0 ]] && break
    sleep 0.1
  done
  local drain_start waited
  drain_start=$(date +%s)
  while :; do
    waited=$(sqlite3 "$dir/state/crcrd.db" "SELECT count(*) FROM outbox WHERE delivery = 'waiting'")
    [[ $waited == 0 || $(($(date +%s) - drain_start)) -ge $((3600 / scale)) ]] && break
    sleep 0.5
  done
  echo "drain: $(($(date +%s) - drain_start)) s after the last run ended; $waited outbox rows still waiting"
  kill "$daemon"
  wait "$daemon" || true
  kill "$standin"
  wait "$standin" 2>/dev/null || true
  python3 "$root/bench/busy-hour.py" measure "$dir" "$label" "$scale" "$prefix" > "$dir/metrics.json"
}

echo "busy hour x$scale: $prs PR syncs + $pushes pushes over $((3600 / scale)) s, 3 tiers of ${job_seconds}s, $slots slots"
run_one old "FIFO sender" "$old" 0
run_one new "lanes + budget" "$new" 1
echo
python3 "$root/bench/busy-hour.py" table "$work/old/metrics.json" "$work/new/metrics.json"
echo "times in (…) are real-hour equivalents (x$scale); work folder: $work"
