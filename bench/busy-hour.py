#!/usr/bin/env python3
"""The workload and the figures of bench/run-busy-hour-bench.sh.

usage:
  busy-hour.py post PORT CA SECRET_FILE FIXTURES SCALE PRS PUSHES
      Posts PRS pull_request syncs and PUSHES trunk pushes, each a relay dispatch
      (repository_dispatch with a client_payload.delivery_id, signed X-Hub-Signature-256) of its
      own SHA and PR, evenly over one hour divided by SCALE; every sixth delivery is a push.
  busy-hour.py measure DIR LABEL SCALE PREFIX
      Reads DIR/state/crcrd.db, DIR/standin.log (bench/github-budget-standin.py) and
      DIR/report.jsonl, and prints the figures of one daemon as JSON.
  busy-hour.py table A.json B.json
      Prints the figures of two daemons side by side.
"""
import datetime
import hashlib
import hmac
import http.client
import json
import sqlite3
import ssl
import sys
import time
import uuid


def ts(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def sha_of(kind, n):
    return hashlib.sha1(f"busy-hour-{kind}-{n}".encode()).hexdigest()


def deliveries(fixtures, prs, pushes):
    pr_fixture = json.load(open(f"{fixtures}/pull_request-synchronize.dispatch.json"))
    push_fixture = json.load(open(f"{fixtures}/push.dispatch.json"))
    total = prs + pushes
    pr = push = 0
    for i in range(total):
        if (i % 6 == 5 and push < pushes) or pr == prs:
            j = json.loads(json.dumps(push_fixture))
            p = j["client_payload"]["payload"]
            p["after"] = sha_of("push", push)
            p["before"] = sha_of("push", push - 1) if push else p["before"]
            p["ref"] = "refs/heads/main"
            push += 1
        else:
            j = json.loads(json.dumps(pr_fixture))
            p = j["client_payload"]["payload"]
            number = 1000 + pr
            p["number"] = number
            p["pull_request"]["number"] = number
            p["pull_request"]["head"]["sha"] = sha_of("pr", pr)
            p["pull_request"]["head"]["ref"] = f"busy-hour-{pr}"
            p["after"] = sha_of("pr", pr)
            pr += 1
        j["client_payload"]["delivery_id"] = str(uuid.uuid4())
        yield j


def post(port, ca, secret_file, fixtures, scale, prs, pushes):
    secret = open(secret_file, "rb").read().strip()
    ctx = ssl.create_default_context(cafile=ca)
    hour = 3600.0 / float(scale)
    items = list(deliveries(fixtures, int(prs), int(pushes)))
    gap = hour / len(items)
    conn = None
    start = time.time()
    refused = 0
    for i, j in enumerate(items):
        wait = start + i * gap - time.time()
        if wait > 0:
            time.sleep(wait)
        body = json.dumps(j).encode()
        sig = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        headers = {"Content-Type": "application/json", "X-GitHub-Event": "repository_dispatch",
                   "X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature-256": sig}
        for _ in range(3):
            try:
                if conn is None:
                    conn = http.client.HTTPSConnection("127.0.0.1", int(port), context=ctx, timeout=30)
                conn.request("POST", "/webhook", body, headers)
                r = conn.getresponse()
                text = r.read()
                if r.status != 202:
                    refused += 1
                    print(f"delivery {i}: HTTP {r.status} {text[:200]!r}", file=sys.stderr)
                break
            except (OSError, http.client.HTTPException):
                conn = None
    print(f"posted {len(items)} deliveries in {time.time() - start:.1f} s ({refused} not queued)")


def quantiles(values):
    v = sorted(values)
    if not v:
        return {"n": 0, "p50": None, "p99": None, "max": None}
    pick = lambda f: v[min(len(v) - 1, int(round(f * (len(v) - 1))))]
    return {"n": len(v), "p50": pick(0.5), "p99": pick(0.99), "max": v[-1]}


def measure(d, label, scale, prefix):
    scale = float(scale)
    late_after = 600.0 / scale
    db = sqlite3.connect(f"file:{d}/state/crcrd.db?mode=ro", uri=True)
    runs = db.execute("SELECT id, sha, state, finished_at FROM runs").fetchall()
    jobs = db.execute("SELECT id, run_id, tier, finished_at FROM jobs WHERE finished_at IS NOT NULL "
                      "AND state = 'completed'").fetchall()
    waiting = dict(db.execute("SELECT sink, count(*) FROM outbox WHERE delivery = 'waiting' "
                              "GROUP BY sink").fetchall())
    posts = ok = refused = pending_sent = 0
    start = ts(db.execute("SELECT min(created_at) FROM runs").fetchone()[0])
    tenth = 600.0 / scale  # ten minutes of the real hour
    timeline = {}  # ten-minute slice -> [pending, tier final, aggregate final, 403]
    final_at = {}  # (sha, context) -> when GitHub accepted its first final state
    callback_at = {}  # job id -> when the relay got its completed callback
    for line in open(f"{d}/standin.log"):
        parts = line.split()
        t, code = float(parts[0]), parts[1]
        if parts[2] == "callback":
            if parts[3] == "completed":
                callback_at.setdefault(int(parts[4]), t)
            continue
        sha, state, context = parts[2], parts[3], parts[4]
        posts += 1
        slot = timeline.setdefault(int((t - start) // tenth), [0, 0, 0, 0])
        slot[3 if code == "403" else 0 if state == "pending" else 2 if context == prefix else 1] += 1
        if code == "403":
            refused += 1
            continue
        ok += 1
        if state == "pending":
            pending_sent += 1
        else:
            final_at.setdefault((sha, context), t)
    file_at = {}
    for line in open(f"{d}/report.jsonl"):
        j = json.loads(line)
        if j["context"] == prefix and j["state"] != "pending":
            file_at.setdefault(j["sha"], ts(j["at"]))
    ended = [(sha, ts(fin)) for _, sha, state, fin in runs if fin and state == "completed"]
    agg = [final_at[(sha, prefix)] - fin for sha, fin in ended if (sha, prefix) in final_at]
    sha_of_run = {rid: sha for rid, sha, _, _ in runs}
    tier_ends = {}
    for jid, rid, tier, fin in jobs:  # the last attempt of a tier decides its final state
        key = (sha_of_run[rid], f"{prefix}/{tier}")
        tier_ends[key] = max(tier_ends.get(key, 0), ts(fin))
    tiers = [final_at[k] - fin for k, fin in tier_ends.items() if k in final_at]
    files = [file_at[sha] - fin for sha, fin in ended if sha in file_at]
    callbacks = [callback_at[jid] - ts(fin) for jid, _, _, fin in jobs if jid in callback_at]
    return {
        "label": label, "scale": scale,
        "runs": len(runs), "runs_ended": len(ended),
        "jobs_ended": len(jobs),
        "aggregate": quantiles(agg),
        "aggregate_late": sum(1 for x in agg if x > late_after),
        "aggregate_lost": len(ended) - len(agg),
        "tiers": quantiles(tiers),
        "tiers_total": len(tier_ends),
        "tiers_late": sum(1 for x in tiers if x > late_after),
        "tiers_lost": len(tier_ends) - len(tiers),
        "posts": posts, "accepted": ok, "refused": refused, "pending_sent": pending_sent,
        "file": quantiles(files), "file_lost": len(ended) - len(files),
        "callbacks": quantiles(callbacks), "callbacks_lost": len(jobs) - len(callbacks),
        "waiting_at_end": waiting,
        "timeline": [timeline.get(i, [0, 0, 0, 0]) for i in range(max(timeline, default=-1) + 1)],
    }


def table(a_path, b_path):
    a, b = json.load(open(a_path)), json.load(open(b_path))
    scale = a["scale"]
    real = lambda x: "-" if x is None else f"{x:.1f} s ({x * scale / 60:.1f} min)"
    fast = lambda x: "-" if x is None else f"{x * 1000:.0f} ms"
    rows = [
        ("runs ended / posted", lambda m: f"{m['runs_ended']} / {m['runs']}"),
        ("run end -> aggregate final, p50", lambda m: real(m["aggregate"]["p50"])),
        ("  p99", lambda m: real(m["aggregate"]["p99"])),
        ("  max", lambda m: real(m["aggregate"]["max"])),
        (f"aggregate finals late (> {600 / scale:.0f} s)", lambda m: str(m["aggregate_late"])),
        ("aggregate finals lost", lambda m: str(m["aggregate_lost"])),
        ("tier finals delivered / due", lambda m: f"{m['tiers']['n']} / {m['tiers_total']}"),
        ("tier end -> tier final, p50", lambda m: real(m["tiers"]["p50"])),
        ("  max", lambda m: real(m["tiers"]["max"])),
        (f"tier finals late (> {600 / scale:.0f} s)", lambda m: str(m["tiers_late"])),
        ("status POSTs made", lambda m: str(m["posts"])),
        ("  accepted (of them pending)", lambda m: f"{m['accepted']} ({m['pending_sent']})"),
        ("  403 secondary rate limit", lambda m: str(m["refused"])),
        ("report file: run end -> line, p50", lambda m: fast(m["file"]["p50"])),
        ("  p99", lambda m: fast(m["file"]["p99"])),
        ("  max", lambda m: fast(m["file"]["max"])),
        ("callbacks: job end -> completed, p50", lambda m: fast(m["callbacks"]["p50"])),
        ("  p99", lambda m: fast(m["callbacks"]["p99"])),
        ("  max", lambda m: fast(m["callbacks"]["max"])),
        ("callbacks missing", lambda m: str(m["callbacks_lost"])),
        ("outbox rows waiting at the end", lambda m: json.dumps(m["waiting_at_end"]) or "{}"),
    ]
    width = max(len(r[0]) for r in rows)
    cw = max(26, max(len(f(m)) for _, f in rows for m in (a, b)))
    print(f"{'':{width}}  {a['label']:>{cw}}  {b['label']:>{cw}}")
    for name, f in rows:
        print(f"{name:{width}}  {f(a):>{cw}}  {f(b):>{cw}}")
    print()
    print(f"status POSTs by {600 / scale:.0f} s (ten minutes of the real hour) from the first delivery: "
          "pending / tier final / aggregate final / 403")
    for i in range(max(len(a["timeline"]), len(b["timeline"]))):
        cell = lambda m: "/".join(map(str, m["timeline"][i])) if i < len(m["timeline"]) else "-"
        print(f"{f'{i * 10}-{i * 10 + 10} min':{width}}  {cell(a):>{cw}}  {cell(b):>{cw}}")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "post":
        post(*args)
    elif cmd == "measure":
        print(json.dumps(measure(*args)))
    elif cmd == "table":
        table(*args)
    else:
        sys.exit(__doc__)
