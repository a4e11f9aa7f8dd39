-- wrk script for bench/run-ingest-bench.sh: POSTs one signed GitHub pull_request webhook,
-- each request with its own X-GitHub-Delivery (so each is a new delivery: 202 and a run),
-- and counts the answers by status, since only a 202 is a stored delivery.
-- usage: wrk -s wrk-webhook.lua URL -- BODY_FILE SIGNATURE_HEX
local threads = {}
local next_id = 0

function setup(thread)
  next_id = next_id + 1
  thread:set("tid", next_id)
  table.insert(threads, thread)
end

function init(args)
  local f = assert(io.open(args[1], "rb"))
  body = f:read("*a")
  f:close()
  signature = "sha256=" .. args[2]
  counter = 0
  accepted = 0
  other = 0
end

function request()
  counter = counter + 1
  local id = string.format("%08x-0000-4000-8000-%012x", tid, counter)
  return wrk.format("POST", "/webhook", {
    ["Content-Type"] = "application/json",
    ["X-GitHub-Event"] = "pull_request",
    ["X-GitHub-Delivery"] = id,
    ["X-Hub-Signature-256"] = signature,
  }, body)
end

function response(status, headers, body)
  if status == 202 then accepted = accepted + 1 else other = other + 1 end
end

function done(summary, latency, requests)
  local a, o = 0, 0
  for _, t in ipairs(threads) do
    a = a + t:get("accepted")
    o = o + t:get("other")
  end
  local seconds = summary.duration / 1e6
  io.write(string.format("rate=%.0f/s accepted=%d other=%d p50=%.2fms p99=%.2fms\n",
    summary.requests / seconds, a, o, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
