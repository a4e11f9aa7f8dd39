#!/usr/bin/env bash
# Ingest throughput (docs/performance.md, "Ingest"): crcrd verifying and durably storing every
# delivery, against nginx answering 202 from memory, over the same TLS keep-alive load, at
# several concurrencies and with two load generators: the project's own (bench_ingest: unique
# signed bodies, checks afterwards that every 202 is in the database) and wrk from Debian
# (one signed body, a unique X-GitHub-Delivery per request; the 202s are counted by the
# script bench/wrk-webhook.lua and compared with the database's count).
# crcrd runs a production-like configuration: selection rules, two runner slots running a
# small CI script that holds its device for JOB_SECONDS (sleep, 2 by default: a test runs on
# the accelerator, not on the host's CPU; 0 gives jobs that end at once), the GitHub reporter
# and the relay callback posting to a stand-in (a second nginx server). PROFILE=minimal
# leaves those out (the figures of issue 5).
# usage: bench/run-ingest-bench.sh [BUILD_DIR]
#   env: CONNECTION_LIST ("16 64 256"), TOTAL (bench_ingest requests, 20000), DURATION (wrk, 5s),
#        ROUNDS (2), THREADS (crcrd's and nginx's, 2), PROFILE (production | minimal), JOB_SECONDS (2)
# A/B mode: BASE_BUILD=OTHER_BUILD_DIR compares that build's crcrd with BUILD_DIR's under the
# same load, alternated ROUNDS times (this VM's speed drifts by about 20% over minutes, so only
# alternated runs compare): wrk's rate and crcrd's CPU per stored delivery (utime + stime from
# /proc) at the first of CONNECTION_LIST, and bench_ingest's p50/p99 at HALF_RATE (1400/s);
# with each, the largest size of the WAL file seen (sampled every 100 ms).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
total=${TOTAL:-20000}
duration=${DURATION:-5s}
rounds=${ROUNDS:-2}
threads=${THREADS:-2}
profile=${PROFILE:-production}
connection_list=${CONNECTION_LIST:-16 64 256}
fixture=$root/tests/fixtures/crcr/pull_request-synchronize.dispatch.json
work=$(mktemp -d /tmp/crcrd-bench-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
command -v wrk >/dev/null || { echo "wrk is not installed (Debian package wrk)" >&2; exit 2; }

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null
echo -n bench-secret > "$work/webhook.secret"
echo ghp_bench > "$work/gh.token"
echo relay-bench > "$work/relay.token"
# wrk's body: the direct GitHub pull_request fixture, made a PyTorch one; signed once.
sed 's|Codertocat/Hello-World|pytorch/pytorch|g; s|"login": "Codertocat"|"login": "pytorch"|' \
  "$root/tests/fixtures/github-webhooks/pull_request-synchronize.json" > "$work/wrk-body.json"
wrk_sig=$(openssl dgst -sha256 -hmac bench-secret -r "$work/wrk-body.json" | cut -d' ' -f1)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "load: bench_ingest $total deliveries of $(wc -c < "$fixture") bytes; wrk $duration of $(wc -c < "$work/wrk-body.json")-byte deliveries; connections: $connection_list; crcrd profile: $profile (jobs of ${JOB_SECONDS:-2} s)"

# 1. nginx: the peer (202 from memory) and, on a second port, the GitHub API and relay stand-in.
nport=$(free_port)
sport=$(free_port)
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
  ssl_certificate $work/tls.crt;
  ssl_certificate_key $work/tls.key;
  ssl_protocols TLSv1.2 TLSv1.3;
  server {
    listen 127.0.0.1:$nport ssl;
    location / { default_type application/json; return 202 '{"status":"queued","run_id":1}'; }
  }
  server {
    listen 127.0.0.1:$sport ssl;
    location /repos/ { default_type application/json; return 201 '{"state":"success"}'; }
    location / { default_type application/json; return 200 '{}'; }
  }
}
CONF
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off;' &

# 2. crcrd: signature check, JSON, normalisation, trust, group commit with synchronous=FULL.
cport=$(free_port)
cat > "$work/crcrd.yaml" <<CONF
log_level: warn
server: {listen: "127.0.0.1:$cport", tls: {cert: tls.crt, key: tls.key}, threads: $threads, max_connections: 4096, max_connections_per_ip: 4096}
storage: {path: state/crcrd.db}
ingest: {secrets: [{id: bench, file: webhook.secret}]}
trust: {downstream_repo: torch-spyre/torch-spyre, fork_labels: [ciflow/crcr/spyre]}
CONF
if [[ $profile == production ]]; then
  mkdir -p "$work/ci"
  cat > "$work/ci/run-tests.sh" <<SH
#!/bin/sh
sleep ${JOB_SECONDS:-2}
SH
  cat >> "$work/ci/run-tests.sh" <<'SH'
echo "tier $CRCR_TIER of run $CRCR_RUN_ID"
printf '<testsuite tests="1"><testcase classname="ci" name="smoke"/></testsuite>\n' > "$CRCR_JUNIT_DIR/results.xml"
SH
  chmod +x "$work/ci/run-tests.sh"
  {
    echo "tiers:"
    echo "  - {name: smoke, always: true, tests: [test/test_smoke.py]}"
    echo "  - {name: affected, from_rules: true}"
    echo "rules:"
    for r in $(seq 20); do
      echo "  - {name: r$r, paths: [\"torch/sub$r/**\", \"aten/*$r.cpp\", \"**/test_r${r}_*.py\"], tests: [test/r$r.py]}"
    done
  } > "$work/selection.yaml"
  cat >> "$work/crcrd.yaml" <<CONF
selection: {rules: selection.yaml}
runners:
  - {name: card-0, labels: [card], health_check: ["/bin/true"]}
  - {name: card-1, labels: [card], health_check: ["/bin/true"]}
execution: {command: [ci/run-tests.sh], work_root: state/work, isolation: none, min_free_bytes: 1MiB}
report:
  github: {api_url: "https://127.0.0.1:$sport", repo: pytorch/pytorch, token_file: gh.token, ca_file: tls.crt}
  crcr_callback: {url: "https://127.0.0.1:$sport/callback", token_file: relay.token, ca_file: tls.crt}
CONF
fi
# crcrd starts afresh (a new database) for each of its measurements and is stopped after it,
# so that the work its deliveries queued (planning, jobs, statuses) is not still running while
# nginx is measured, nor left over for the next measurement.
crcrd_pid=
start_crcrd() {
  rm -rf "$work/state"
  ${CRCRD_WRAP:-} "${crcrd_bin:-$build/crcrd}" --config "$work/crcrd.yaml" 2>> "$work/crcrd.log" &
  crcrd_pid=$!
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$cport) 2>/dev/null && break; sleep 0.05; done
}
stop_crcrd() {
  peak=$(awk '/VmHWM/ {print $2}' /proc/$crcrd_pid/status)
  kill -TERM "$crcrd_pid"
  wait "$crcrd_pid" || true
}
for port in $nport $sport; do
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
done
start_crcrd
rss_idle=$(awk '/VmRSS/ {print $2}' /proc/$crcrd_pid/status)
stop_crcrd
queued() { sqlite3 "$work/state/crcrd.db" "SELECT count(*) FROM deliveries WHERE verdict = 'queued'"; }
# wrk against crcrd at $1 connections: its summary line, then "stored=N missing=N".
wrk_crcrd() {
  local before out accepted stored
  before=$(queued)
  out=$(wrk -t "$threads" -c "$1" -d "$duration" -s "$root/bench/wrk-webhook.lua" "https://127.0.0.1:$cport/webhook" \
        -- "$work/wrk-body.json" "$wrk_sig" "$(openssl rand -hex 4)")
  grep 'not 202' <<<"$out" >&2 || true
  out=$(tail -1 <<<"$out")
  accepted=$(sed -E 's/.*accepted=([0-9]+).*/\1/' <<<"$out")
  stored=$(( $(queued) - before ))
  echo "$out stored=$stored missing=$(( accepted > stored ? accepted - stored : 0 ))"
}

# The largest size of crcrd's WAL file while it runs, sampled every 100 ms: wal_watch_start,
# the load, then wal_watch_stop sets wal_max to "wal_max=N MiB" (in this shell, not in a $(...),
# where the sampler could not be waited for).
wal_watch_start() {
  echo 0 > "$work/wal.max"
  (
    max=0
    while :; do
      s=$(stat -c %s "$work/state/crcrd.db-wal" 2>/dev/null || echo 0)
      if (( s > max )); then max=$s; echo "$max" > "$work/wal.max.new" && mv "$work/wal.max.new" "$work/wal.max"; fi
      sleep 0.1
    done
  ) &
  wal_watch_pid=$!
}
wal_watch_stop() {
  kill "$wal_watch_pid"
  wait "$wal_watch_pid" 2>/dev/null || true
  wal_max="wal_max=$(( $(cat "$work/wal.max") >> 20 ))MiB"
}

if [[ -n ${BASE_BUILD:-} ]]; then
  base_bin=$(cd "$BASE_BUILD" && pwd)/crcrd
  [[ -x $base_bin && -x $(dirname "$base_bin")/crcrd-job-init ]] || { echo "no crcrd and crcrd-job-init in $BASE_BUILD" >&2; exit 2; }
  c=${connection_list%% *}
  half=${HALF_RATE:-1400}
  tick=$(getconf CLK_TCK)
  for round in $(seq "$rounds"); do
    for which in base new; do
      crcrd_bin=$([[ $which == base ]] && echo "$base_bin" || echo "$build/crcrd")
      start_crcrd
      wal_watch_start
      out=$(wrk_crcrd "$c")
      cpu_ms=$(awk -v t="$tick" '{printf "%.0f", ($14 + $15) * 1000 / t}' "/proc/$crcrd_pid/stat")
      wal_watch_stop
      stop_crcrd
      stored=$(sed -E 's/.*stored=([0-9]+).*/\1/' <<<"$out")
      echo "ab round $round $which c=$c wrk: $out cpu/delivery=$(awk -v m="$cpu_ms" -v n="$stored" 'BEGIN {printf "%.3f", m / n}') ms $wal_max" | tee -a "$work/results"
      start_crcrd
      wal_watch_start
      out=$("$build/bench/bench_ingest" --label "ab round $round $which c=$c half rate ($half/s)" --port "$cport" --ca "$work/tls.crt" \
        --fixture "$fixture" --connections "$c" --total "$(( half * 4 ))" --rate "$half" --db "$work/state/crcrd.db" \
        --run "ab$round-$which")
      wal_watch_stop
      echo "$out $wal_max" | tee -a "$work/results"
      stop_crcrd
    done
  done
  exit 0
fi

# The machine is shared with the load generator and noisy: alternate the two, several rounds.
for c in $connection_list; do
  for round in $(seq "$rounds"); do
    "$build/bench/bench_ingest" --label "c=$c bench_ingest nginx" --port "$nport" --ca "$work/tls.crt" --fixture "$fixture" \
      --connections "$c" --total "$total" | tee -a "$work/results"
    start_crcrd
    out=$("$build/bench/bench_ingest" --label "c=$c bench_ingest crcrd" --port "$cport" --ca "$work/tls.crt" --fixture "$fixture" \
      --connections "$c" --total "$total" --db "$work/state/crcrd.db" --run "c$c-r$round")
    echo "$out" | tee -a "$work/results"
    stop_crcrd
    # The same load at half the rate crcrd just reached (an open load: each request due at
    # its time, its latency counted from then), for the p99 at half of the peak.
    half=$(sed -E 's/.*rate=([0-9]+).*/\1/' <<<"$out"); half=$(( half / 2 ))
    start_crcrd
    "$build/bench/bench_ingest" --label "c=$c half rate ($half/s) crcrd" --port "$cport" --ca "$work/tls.crt" --fixture "$fixture" \
      --connections "$c" --total "$(( half * 4 ))" --rate "$half" --db "$work/state/crcrd.db" --run "c$c-r$round-half" | tee -a "$work/results"
    stop_crcrd
    # nginx under the same open load: the part of the tail that is the machine's and the load
    # generator's, not crcrd's.
    "$build/bench/bench_ingest" --label "c=$c half rate ($half/s) nginx" --port "$nport" --ca "$work/tls.crt" --fixture "$fixture" \
      --connections "$c" --total "$(( half * 4 ))" --rate "$half" | tee -a "$work/results"
    # wrk: one thread per core, as many connections as the others.
    out=$(wrk -t "$threads" -c "$c" -d "$duration" -s "$root/bench/wrk-webhook.lua" "https://127.0.0.1:$nport/webhook" \
          -- "$work/wrk-body.json" "$wrk_sig" "$(openssl rand -hex 4)")
    grep 'not 202' <<<"$out" || true
    out=$(tail -1 <<<"$out")
    echo "c=$c wrk nginx          $out" | tee -a "$work/results"
    start_crcrd
    out=$(wrk_crcrd "$c")
    stop_crcrd
    echo "c=$c wrk crcrd          $out peak_rss=${peak}KiB" | tee -a "$work/results"
  done
done
echo "crcrd rss: ${rss_idle} KiB idle after start (peaks per measurement above)"
median() { grep -F "$1" "$work/results" | sed -E 's/.*rate=([0-9]+).*/\1/' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
p99() { grep -F "$1" "$work/results" | sed -E 's/.*p99=([0-9.]+)ms.*/\1/' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for c in $connection_list; do
  for gen in bench_ingest wrk; do
    n=$(median "c=$c $gen nginx"); r=$(median "c=$c $gen crcrd")
    echo "median c=$c $gen: nginx ${n}/s, crcrd ${r}/s (p99 $(p99 "c=$c $gen crcrd") ms), ratio $(awk -v c="$r" -v n="$n" 'BEGIN {printf "%.2f", c/n}')"
  done
  for server in crcrd nginx; do
    echo "median c=$c at half of crcrd's rate, $server: p50 $(grep -E "c=$c half rate .* $server " "$work/results" | sed -E 's/.*p50=([0-9.]+)ms.*/\1/' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') ms, p99 $(grep -E "c=$c half rate .* $server " "$work/results" | sed -E 's/.*p99=([0-9.]+)ms.*/\1/' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') ms"
  done
done
