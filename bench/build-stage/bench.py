#!/usr/bin/env python3
"""The workload and the figures of bench/run-build-bench.sh.

usage:
  bench.py post PORT CA SECRET_FILE SHAS GAP OUT.json
      Posts one relay delivery per SHA (in the file's order, GAP seconds apart): every third
      a PR sync (PR 100 + i % 4, its base the SHA before), the others pushes to main.
  bench.py wait DIR       Until no run of DIR/state/crcrd.db is queued or running.
  bench.py warm PORT CA SECRET_FILE SHAS OUT.json
      Posts a PR sync of the last SHA, already built: the warm-cache probe.
  bench.py measure DIR NAME   The figures of one shape, as JSON.
  bench.py table A.json B.json
"""
import datetime
import hashlib
import hmac
import http.client
import json
import re
import sqlite3
import ssl
import statistics
import sys
import time
import uuid


def ts(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def send(port, ca, secret, payload):
    body = json.dumps({"event_type": "pytorch-crcr", "client_payload": payload}).encode()
    sig = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    headers = {"Content-Type": "application/json", "X-GitHub-Event": "repository_dispatch",
               "X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature-256": sig}
    conn = http.client.HTTPSConnection("127.0.0.1", int(port),
                                       context=ssl.create_default_context(cafile=ca), timeout=30)
    at = time.time()
    conn.request("POST", "/webhook", body, headers)
    r = conn.getresponse()
    text = r.read()
    if r.status != 202:
        raise SystemExit(f"HTTP {r.status} {text[:200]!r}")
    return at, json.loads(text)["run_id"]


def post(port, ca, secret_file, shas_file, gap, out):
    secret = open(secret_file, "rb").read().strip()
    shas = open(shas_file).read().split()
    posted = []
    start = time.time()
    for i, sha in enumerate(shas):
        wait = start + i * float(gap) - time.time()
        if wait > 0:
            time.sleep(wait)
        if i % 3 == 1:
            pr = 100 + i % 4
            payload = {"upstream_sha": sha, "ref": f"refs/pull/{pr}/head", "pr_number": pr,
                       "base_sha": shas[i - 1]}
        else:
            payload = {"upstream_sha": sha, "ref": "refs/heads/main"}
        at, run = send(port, ca, secret, payload)
        posted.append({"sha": sha, "run": run, "at": at})
    json.dump(posted, open(out, "w"))
    print(f"posted {len(shas)} deliveries in {time.time() - start:.1f} s")


def wait(d):
    db = sqlite3.connect(f"file:{d}/state/crcrd.db?mode=ro", uri=True)
    start = time.time()
    while db.execute("SELECT count(*) FROM runs WHERE state IN ('queued','running')").fetchone()[0]:
        time.sleep(0.5)
    print(f"every run ended {time.time() - start:.1f} s after the last delivery")


def warm(port, ca, secret_file, shas_file, out):
    secret = open(secret_file, "rb").read().strip()
    sha = open(shas_file).read().split()[-1]
    at, run = send(port, ca, secret, {"upstream_sha": sha, "ref": "refs/pull/999/head",
                                      "pr_number": 999, "base_sha": sha})
    json.dump({"sha": sha, "run": run, "at": at}, open(out, "w"))


def log_value(path, key):
    """The float after `key=` in a job's log (bench-test start=, seconds=), or None."""
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return None
    m = re.findall(key + r"=([0-9.]+)", text)
    return float(m[-1]) if m else None


def measure(d, name):
    db = sqlite3.connect(f"file:{d}/state/crcrd.db?mode=ro", uri=True)
    warm = json.load(open(f"{d}/warm.json"))
    runs = db.execute("SELECT id, sha, state, conclusion FROM runs").fetchall()
    jobs = db.execute("SELECT id, run_id, tier, slot, started_at, finished_at, log_path, "
                      "coalesce(build_key, ''), conclusion FROM jobs WHERE state = 'completed'").fetchall()
    sha_of = {r[0]: r[1] for r in runs}
    tiers = [j for j in jobs if j[2] != "build" and j[3] and j[4] and j[5]]
    builds = [j for j in jobs if j[2] == "build" and j[3] and j[4] and j[5]]
    lease = sum(ts(j[5]) - ts(j[4]) for j in tiers)
    testing = 0.0
    for j in tiers:
        s, e = log_value(j[6], "bench-test start"), log_value(j[6], "bench-test end")
        if s is not None and e is not None:
            testing += e - s
    # Builds per key: the build stage's builds that ran, per key; the reference's builds are
    # its tiers' (each built), per SHA.
    per_key = {}
    if builds:
        for j in builds:
            per_key[j[7]] = per_key.get(j[7], 0) + 1
    else:
        for j in tiers:
            per_key[sha_of[j[1]]] = per_key.get(sha_of[j[1]], 0) + 1
    build_seconds = {"cold": [], "incremental": []}
    for j in (builds or tiers):
        text = open(j[6], errors="replace").read() if j[6] else ""
        for mode, secs in re.findall(r"bench-build mode=(\w+) seconds=([0-9.]+)", text):
            build_seconds[mode].append(float(secs))
    warm_tiers = [j for j in tiers if j[1] == warm["run"]]
    first_start = min((log_value(j[6], "bench-test start") or 1e18) for j in warm_tiers) \
        if warm_tiers else None
    return_ = {
        "name": name,
        "runs": len(runs),
        "verdicts": {str(c): sum(1 for r in runs if r[3] == c) for c in {r[3] for r in runs}},
        "builds_per_key": {"keys": len(per_key), "max": max(per_key.values()) if per_key else 0,
                           "total": sum(per_key.values())},
        "device_lease_s": round(lease, 1),
        "device_testing_s": round(testing, 1),
        "testing_share": round(testing / lease, 3) if lease else None,
        "device_hours_per_verdict": round(lease / 3600.0 / max(1, sum(1 for r in runs if r[2] == "completed")), 4),
        "build_s": {k: [round(x, 1) for x in v] for k, v in build_seconds.items()},
        "warm_webhook_to_test_s": round(first_start - warm["at"], 2) if first_start else None,
    }
    print(json.dumps(return_))


def table(a_file, b_file):
    a, b = json.load(open(a_file)), json.load(open(b_file))

    def med(v):
        return f"{statistics.median(v):.1f} s" if v else "-"

    rows = [
        ("runs (verdicts)", lambda m: f"{m['runs']} ({', '.join(f'{k} {v}' for k, v in sorted(m['verdicts'].items(), key=lambda kv: str(kv[0])))})"),
        ("builds per key: keys / max / total", lambda m: f"{m['builds_per_key']['keys']} / {m['builds_per_key']['max']} / {m['builds_per_key']['total']}"),
        ("device lease seconds", lambda m: f"{m['device_lease_s']}"),
        ("  of them testing", lambda m: f"{m['device_testing_s']} ({m['testing_share']})"),
        ("device hours per verdict", lambda m: f"{m['device_hours_per_verdict']}"),
        ("cold builds: n, median", lambda m: f"{len(m['build_s']['cold'])}, {med(m['build_s']['cold'])}"),
        ("incremental builds: n, median", lambda m: f"{len(m['build_s']['incremental'])}, {med(m['build_s']['incremental'])}"),
        ("warm cache: webhook -> first test start", lambda m: f"{m['warm_webhook_to_test_s']} s"),
    ]
    print(f"{'':44}{a['name']:>24}{b['name']:>24}")
    for label, f in rows:
        print(f"{label:44}{f(a):>24}{f(b):>24}")
    c, i = a["build_s"]["cold"], a["build_s"]["incremental"]
    if c and i:
        print(f"incremental (nearest + ccache) / cold, build stage: {statistics.median(i) / statistics.median(c):.3f}")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "post":
        post(*sys.argv[2:8])
    elif cmd == "wait":
        wait(sys.argv[2])
    elif cmd == "warm":
        warm(*sys.argv[2:7])
    elif cmd == "measure":
        measure(sys.argv[2], sys.argv[3])
    elif cmd == "table":
        table(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
