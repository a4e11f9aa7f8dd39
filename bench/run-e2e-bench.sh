#!/usr/bin/env bash
# End to end from webhook to jobs queued: signed deliveries over TLS, then, from the
# database, the time from each run's commit to its jobs' creation (the planner's latency),
# and the time until the last run was planned.
# With REPORT=1, every status also goes through the outbox to a report file, and the time
# from each status row's commit to its fsynced line is reported too.
# usage: bench/run-e2e-bench.sh [BUILD_DIR]   (env: TOTAL, CONNECTIONS, REPORT)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
total=${TOTAL:-2000}
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
