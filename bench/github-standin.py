#!/usr/bin/env python3
"""A GitHub API stand-in for the benches whose pull-request files answer after a delay, as the
real API's do (100-300 ms a call from a CI host), where nginx answers at once.

usage: github-standin.py PORT CERT KEY DELAY_MS LOG

GET .../pulls/N/files answers one changed file (a path under a rule of the demo rules) after
DELAY_MS; any other request answers 201 {"state":"success"} (a commit status) at once, so that
the statuses' drain still measures the sender's pacing, not the stand-in. Every request's arrival is
logged to LOG as "<unix seconds> <method> <path>", the format of the nginx stand-in's log.
Keep-alive, HTTP/1.1, TLS; requests on different connections are answered concurrently.
"""
import asyncio
import json
import ssl
import sys
import time


async def serve(reader, writer, delay, log):
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
            if length:
                await reader.readexactly(length)
            log.write(f"{time.time():.3f} {method} {path}\n")
            if method == "GET" and "/pulls/" in path and "/files" in path:
                await asyncio.sleep(delay)
                status, body = "200 OK", json.dumps([{"filename": "torch/_inductor/codegen/wrapper.py",
                                                      "status": "modified"}])
            else:
                status, body = "201 Created", '{"state":"success"}'
            data = body.encode()
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError, ValueError):
        pass
    finally:
        writer.close()


async def main():
    port, cert, key, delay_ms, log_path = sys.argv[1:6]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    log = open(log_path, "a", buffering=1)
    delay = int(delay_ms) / 1000.0
    server = await asyncio.start_server(lambda r, w: serve(r, w, delay, log), "127.0.0.1", int(port), ssl=ctx)
    async with server:
        await server.serve_forever()


asyncio.run(main())
