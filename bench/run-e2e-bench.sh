#!/usr/bin/env bash
# End to end from webhook to jobs queued: signed deliveries over TLS, then, from the
# database, the time from each run's commit to its jobs' creation (the planner's latency),
# and the time until the last run was planned.
# With REPORT=1, every status also goes through the outbox to a report file, and the time
# from each status row's commit to its fsynced line is reported too.
# With REPORT=github, the statuses go to a GitHub API stand-in (nginx, logging when each POST
# arrived) paced by report.min_interval (MIN_INTERVAL, 20ms here; 1s by default; TOTAL 200 by default), and one
# runner slot runs each tier at once, so that a context's states follow each other faster
# than the pace and the older ones are coalesced. Reported: the first status's commit -> POST,
# the gaps between POSTs against min_interval, and the whole drain against its lower bound
# (POSTs - 1) x min_interval.
# With REPORT=github and API_DELAY_MS, the stand-in is bench/github-standin.py instead, which
# lists one changed file per pull request after that delay (the real API takes 100-300 ms) and
# answers statuses at once: the planner's look-ups of changed paths wait as in production.
# usage: bench/run-e2e-bench.sh [BUILD_DIR]   (env: TOTAL, CONNECTIONS, REPORT, MIN_INTERVAL, API_DELAY_MS)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
total=${TOTAL:-$([[ ${REPORT:-0} == github ]] && echo 200 || echo 2000)}
connections=${CONNECTIONS:-16}
fixture=$root/tests/fixtures/crcr/pull_request-synchronize.dispatch.json
work=$(mktemp -d /tmp/crcrd-e2e-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
cd "$work"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext "subjectAltName=IP:127.0.0.1" -keyout tls.key -out tls.crt 2>/dev/null
echo -n bench-secret > webhook.secret
cp "$root/config/selection.demo.yaml" selection.yaml
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > crcrd.yaml <<CONF
log_level: warn
server: {listen: "127.0.0.1:$port", tls: {cert: tls.crt, key: tls.key}}
storage: {path: state/crcrd.db}
ingest: {secrets: [{id: bench, file: webhook.secret}]}
trust: {downstream_repo: torch-spyre/torch-spyre, fork_labels: [ciflow/crcr/spyre]}
selection: {rules: selection.yaml, concurrency: {pull_request: none}}
CONF
if [[ ${REPORT:-0} == 1 ]]; then
  echo "report: {context_prefix: crcr/bench, file: statuses.jsonl}" >> crcrd.yaml
fi
min_interval=${MIN_INTERVAL:-20ms}
if [[ ${REPORT:-0} == github ]]; then
  gport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkdir -p nginx/logs ci
  cat > nginx/nginx.conf <<NGINX
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
events { worker_connections 256; }
http {
  log_format posts '\$msec \$request_method \$request_uri';
  access_log $work/nginx/posts.log posts;
  ssl_certificate $work/tls.crt;
  ssl_certificate_key $work/tls.key;
  server {
    listen 127.0.0.1:$gport ssl;
    location / { default_type application/json; return 201 '{"state":"success"}'; }
  }
}
NGINX
  if [[ -n ${API_DELAY_MS:-} ]]; then
    # PRs' files after API_DELAY_MS, as the real API answers; statuses at once.
    python3 "$root/bench/github-standin.py" "$gport" tls.crt tls.key "$API_DELAY_MS" "$work/nginx/posts.log" &
  else
    nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off;' &
  fi
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$gport) 2>/dev/null && break; sleep 0.05; done
  echo ghp_bench > gh.token
  printf '#!/bin/sh\nprintf %s > "$CRCR_JUNIT_DIR/r.xml"\n' "'<testsuite tests=\"1\"><testcase classname=\"ci\" name=\"ok\"/></testsuite>'" > ci/ci.sh
  chmod +x ci/ci.sh
  cat >> crcrd.yaml <<CONF
runners: [{name: card-0, labels: [sim], health_check: [/bin/true]}]
execution: {command: [ci/ci.sh], work_root: state/work, isolation: none, min_free_bytes: 1MiB}
report:
  context_prefix: crcr/bench
  min_interval: $min_interval
  github: {api_url: "https://127.0.0.1:$gport", repo: pytorch/pytorch, token_file: gh.token, ca_file: tls.crt}
CONF
fi
${CRCRD_WRAP:-} "$build/crcrd" --config crcrd.yaml 2> crcrd.log &
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
"$build/bench/bench_ingest" --label "webhook (with planner)" --port "$port" --ca tls.crt --fixture "$fixture" \
  --connections "$connections" --total "$total" --db state/crcrd.db
for _ in $(seq 600); do
  left=$(sqlite3 state/crcrd.db "SELECT count(*) FROM runs WHERE selection IS NULL")
  [[ $left == 0 ]] && break; sleep 0.1
done
sqlite3 state/crcrd.db <<'SQL'
.mode list
WITH lat AS (
  SELECT (julianday(min(j.created_at)) - julianday(r.created_at)) * 86400000.0 AS ms
  FROM runs r JOIN jobs j ON j.run_id = r.id GROUP BY r.id ORDER BY ms)
SELECT 'jobs queued after the run was stored: runs=' || count(*) ||
       ' p50=' || printf('%.1f', (SELECT ms FROM lat LIMIT 1 OFFSET (SELECT count(*) FROM lat) / 2)) || 'ms' ||
       ' p99=' || printf('%.1f', (SELECT ms FROM lat LIMIT 1 OFFSET (SELECT count(*) FROM lat) * 99 / 100)) || 'ms' ||
       ' max=' || printf('%.1f', max(ms)) || 'ms'
FROM lat;
-- From the delivery's arrival (received_at: its request read, before the signature check).
WITH lat AS (
  SELECT (julianday(min(j.created_at)) - julianday(d.received_at)) * 86400000.0 AS ms
  FROM deliveries d JOIN jobs j ON j.run_id = d.run_id WHERE d.verdict = 'queued' GROUP BY d.id ORDER BY ms)
SELECT 'webhook received -> first job queued: runs=' || count(*) ||
       ' p50=' || printf('%.1f', (SELECT ms FROM lat LIMIT 1 OFFSET (SELECT count(*) FROM lat) / 2)) || 'ms' ||
       ' p99=' || printf('%.1f', (SELECT ms FROM lat LIMIT 1 OFFSET (SELECT count(*) FROM lat) * 99 / 100)) || 'ms' ||
       ' max=' || printf('%.1f', max(ms)) || 'ms'
FROM lat;
SELECT 'jobs per run: ' || printf('%.1f', (SELECT count(*) FROM jobs) * 1.0 / (SELECT count(*) FROM runs));
SELECT 'changed paths from: ' || group_concat(source || ' ' || n, ', ')
FROM (SELECT json_extract(selection, '$.source') AS source, count(*) AS n FROM runs GROUP BY 1);
SQL
if [[ ${REPORT:-0} == 1 ]]; then
  for _ in $(seq 600); do
    left=$(sqlite3 state/crcrd.db "SELECT count(*) FROM outbox WHERE delivery = 'waiting'")
    [[ $left == 0 ]] && break; sleep 0.1
  done
  sqlite3 state/crcrd.db <<'SQL'
.mode list
WITH lat AS (
  SELECT (julianday(sent_at) - julianday(created_at)) * 86400000.0 AS ms FROM outbox WHERE delivery = 'sent' ORDER BY ms)
SELECT 'statuses written: ' || count(*) || ' (' || (SELECT count(*) FROM outbox WHERE delivery = 'coalesced') || ' coalesced)' ||
       ' commit-to-line p50=' || printf('%.1f', (SELECT ms FROM lat LIMIT 1 OFFSET (SELECT count(*) FROM lat) / 2)) || 'ms' ||
       ' p99=' || printf('%.1f', (SELECT ms FROM lat LIMIT 1 OFFSET (SELECT count(*) FROM lat) * 99 / 100)) || 'ms'
FROM lat;
SQL
  echo "lines in the report file: $(wc -l < statuses.jsonl)"
fi
if [[ ${REPORT:-0} == github ]]; then
  # Every run ended and nothing left waiting in the outbox (5 minutes at most).
  for _ in $(seq 3000); do
    left=$(sqlite3 state/crcrd.db "SELECT (SELECT count(*) FROM runs WHERE state IN ('queued','running')) + (SELECT count(*) FROM outbox WHERE delivery = 'waiting')")
    [[ $left == 0 ]] && break; sleep 0.1
  done
  sqlite3 -separator ' ' state/crcrd.db "SELECT delivery, count(*) FROM outbox WHERE sink = 'github' GROUP BY delivery" > outbox.counts
  sqlite3 state/crcrd.db "SELECT (julianday(min(created_at)) - 2440587.5) * 86400.0 FROM outbox WHERE sink = 'github'" > outbox.first
  python3 - "$min_interval" <<'PY'
import re, sys
unit = {'ms': 1e-3, 's': 1.0}
m = re.fullmatch(r'(\d+)(ms|s)', sys.argv[1]); interval = int(m.group(1)) * unit[m.group(2)]
posts = [float(l.split()[0]) for l in open('nginx/posts.log') if ' POST /repos/' in l and '/statuses/' in l]
counts = dict(l.split() for l in open('outbox.counts'))
first_row = float(open('outbox.first').read())
gaps = sorted(b - a for a, b in zip(posts, posts[1:]))
q = lambda v, f: v[min(len(v) - 1, int(len(v) * f))] * 1000
print(f"github statuses: rows sent={counts.get('sent', 0)} coalesced={counts.get('coalesced', 0)} dead={counts.get('dead', 0)}; POSTs at the stand-in: {len(posts)}")
print(f"first status: commit -> POST {(posts[0] - first_row) * 1000:.1f} ms")
print(f"gaps between POSTs (min_interval {interval * 1000:.0f} ms): min {q(gaps, 0):.1f} ms, p50 {q(gaps, 0.5):.1f} ms, p99 {q(gaps, 0.99):.1f} ms, max {gaps[-1] * 1000:.1f} ms")
drain = posts[-1] - posts[0]
print(f"drain: {drain:.2f} s for {len(posts)} POSTs; lower bound (POSTs - 1) x min_interval = {(len(posts) - 1) * interval:.2f} s ({(len(posts) - 1) * interval / drain * 100:.0f}% of the pace)")
PY
fi
