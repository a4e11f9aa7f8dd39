#!/usr/bin/env bash
# Ingest throughput: crcrd (verify + durably store every delivery) against the ceiling of
# this machine, nginx answering 202 from memory over the same TLS keep-alive load.
# usage: bench/run-ingest-bench.sh [BUILD_DIR]   (env: TOTAL, CONNECTIONS, THREADS)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
total=${TOTAL:-20000}
connections=${CONNECTIONS:-64}
threads=${THREADS:-2}
fixture=$root/tests/fixtures/crcr/pull_request-synchronize.dispatch.json
work=$(mktemp -d /tmp/crcrd-bench-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null
echo -n bench-secret > "$work/webhook.secret"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "load: $total deliveries, $connections keep-alive TLS connections, body $(wc -c < "$fixture") bytes"

# 1. The ceiling: nginx returning 202 with a static body.
nport=$(free_port)
mkdir -p "$work/nginx/logs"
cat > "$work/nginx/nginx.conf" <<CONF
worker_processes $threads;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_max_body_size 1m;
  client_body_buffer_size 1m;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$nport ssl;
    ssl_certificate $work/tls.crt;
    ssl_certificate_key $work/tls.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    location / {
      default_type application/json;
      return 202 '{"status":"queued","run_id":1}';
    }
  }
}
CONF
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off;' &
nginx_pid=$!

# 2. crcrd: signature check, JSON, normalisation, trust, group commit with synchronous=FULL.
cport=$(free_port)
cat > "$work/crcrd.yaml" <<CONF
log_level: warn
server: {listen: "127.0.0.1:$cport", tls: {cert: tls.crt, key: tls.key}, threads: $threads, max_connections: 4096}
storage: {path: state/crcrd.db}
ingest: {secrets: [{id: bench, file: webhook.secret}]}
trust: {downstream_repo: torch-spyre/torch-spyre, fork_labels: [ciflow/crcr/spyre]}
CONF
${CRCRD_WRAP:-} "$build/crcrd" --config "$work/crcrd.yaml" 2> "$work/crcrd.log" &
crcrd_pid=$!
for port in $nport $cport; do
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
done
rss_idle=$(awk '/VmRSS/ {print $2}' /proc/$crcrd_pid/status)

# The machine is shared with the load generator and noisy: alternate the two, several rounds.
rounds=${ROUNDS:-3}
for round in $(seq "$rounds"); do
  "$build/bench/bench_ingest" --label "nginx static 202" --port "$nport" --ca "$work/tls.crt" --fixture "$fixture" \
    --connections "$connections" --total "$total" | tee -a "$work/results"
  "$build/bench/bench_ingest" --label "crcrd verify+store" --port "$cport" --ca "$work/tls.crt" --fixture "$fixture" \
    --connections "$connections" --total "$total" --db "$work/state/crcrd.db" --run "round$round" | tee -a "$work/results"
done
echo "crcrd rss: ${rss_idle} KiB idle, $(awk '/VmHWM/ {print $2}' /proc/$crcrd_pid/status) KiB peak; database $(du -k "$work/state/crcrd.db" | cut -f1) KiB for $((total * rounds)) deliveries"
median() { grep "^$1" "$work/results" | sed -E 's/.*rate=([0-9]+).*/\1/' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
n=$(median nginx); c=$(median crcrd)
echo "median: nginx ${n}/s, crcrd ${c}/s, ratio $(awk -v c="$c" -v n="$n" 'BEGIN {printf "%.2f", c/n}')"
