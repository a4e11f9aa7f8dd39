#!/usr/bin/env python3
"""A GitHub API stand-in that enforces GitHub's secondary limit on content-creating requests,
and a relay callback endpoint, for bench/run-busy-hour-bench.sh.

usage: github-budget-standin.py PORT CERT KEY LOG SCALE

Commit statuses (POST .../statuses/<sha>) are content-creating requests: at most 80 in any
60 s and 500 in any 3600 s, both spans divided by SCALE (10: 80 in 6 s, 500 in 360 s), sliding
windows of the accepted requests. Beyond them the answer is GitHub's: 403 {"message": "You have
exceeded a secondary rate limit..."} with Retry-After: 60 s divided by SCALE (at least 1).
A refused request is not counted in the windows (GitHub does not say whether it is).
Every status POST is logged to LOG as "<unix seconds> <code> <sha> <state> <context>".
POST /relay/callback answers 200 {"status":"ok"} and is logged as "<unix seconds> 200 callback
<workflow.status> <workflow.check_run_id> <workflow.job_name>" (the relay's own rules are not enforced here).
GET .../pulls/N/files answers one changed file; any other request answers 200 [].
Keep-alive, HTTP/1.1, TLS; requests on different connections are answered concurrently.
"""
import asyncio
import collections
import json
import math
import ssl
import sys
import time

SECONDARY = ("You have exceeded a secondary rate limit. Please wait a few minutes before you try "
             "again. If you reach out to GitHub Support for help, please include the request ID.")
DOCS = ("https://docs.github.com/rest/using-the-rest-api/"
        "rate-limits-for-the-rest-api#about-secondary-rate-limits")


class Budget:
    """Sliding windows over the times of accepted requests."""

    def __init__(self, windows):
        self.windows = windows  # [(requests, per_seconds)]
        self.times = collections.deque()
        self.longest = max(per for _, per in windows)

    def take(self, now):
        while self.times and self.times[0] <= now - self.longest:
            self.times.popleft()
        for requests, per in self.windows:
            if sum(1 for t in self.times if t > now - per) >= requests:
                return False
        self.times.append(now)
        return True


def answer(writer, code, reason, body, extra=""):
    data = body.encode()
    writer.write(f"HTTP/1.1 {code} {reason}\r\nContent-Type: application/json; charset=utf-8\r\n"
                 f"{extra}Content-Length: {len(data)}\r\n\r\n".encode() + data)


async def serve(reader, writer, budget, retry_after, log):
    try:
        while True:
            line = await reader.readline()
            if not line:
                return
            method, path, _ = line.decode("latin-1").split(" ", 2)
            length = 0
            while True:
                header = await reader.readline()
                if header in (b"\r\n", b"\n", b""):
                    break
                name, _, value = header.decode("latin-1").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            body = await reader.readexactly(length) if length else b""
            now = time.time()
            if method == "POST" and "/statuses/" in path:
                sha = path.rsplit("/", 1)[1]
                status = json.loads(body)
                if budget.take(now):
                    log.write(f"{now:.3f} 201 {sha} {status['state']} {status['context']}\n")
                    answer(writer, 201, "Created", json.dumps({"id": 1, "state": status["state"]}))
                else:
                    log.write(f"{now:.3f} 403 {sha} {status['state']} {status['context']}\n")
                    answer(writer, 403, "Forbidden",
                           json.dumps({"message": SECONDARY, "documentation_url": DOCS}),
                           f"Retry-After: {retry_after}\r\n")
            elif method == "POST" and path.startswith("/relay/callback"):
                wf = json.loads(body).get("workflow", {})
                log.write(f"{now:.3f} 200 callback {wf.get('status')} {wf.get('check_run_id')} "
                          f"{wf.get('job_name')}\n")
                answer(writer, 200, "OK", '{"status":"ok"}')
            elif method == "GET" and "/pulls/" in path and "/files" in path:
                answer(writer, 200, "OK", json.dumps([{"filename": "torch/_inductor/codegen/wrapper.py",
                                                       "status": "modified"}]))
            else:
                answer(writer, 200, "OK", "[]")
            await writer.drain()
    except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError, ValueError):
        pass
    finally:
        writer.close()


async def main():
    port, cert, key, log_path, scale = sys.argv[1:6]
    scale = float(scale)
    budget = Budget([(80, 60 / scale), (500, 3600 / scale)])
    retry_after = max(1, math.ceil(60 / scale))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    log = open(log_path, "a", buffering=1)
    server = await asyncio.start_server(lambda r, w: serve(r, w, budget, retry_after, log),
                                        "127.0.0.1", int(port), ssl=ctx)
    async with server:
        await server.serve_forever()


asyncio.run(main())
