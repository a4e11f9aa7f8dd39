-- wrk script for bench/run-ingest-bench.sh: POSTs one signed GitHub pull_request webhook,
-- each request with its own X-GitHub-Delivery (so each is a new delivery: 202 and a run),
-- and counts the answers by status, since only a 202 is a stored delivery.
-- usage: wrk -s wrk-webhook.lua URL -- BODY_FILE SIGNATURE_HEX [RUN_TAG]
-- RUN_TAG (8 hex digits) keeps the delivery ids of one wrk run apart from another's.
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
  run_tag = args[3] or "00000000"
  counter = 0
  accepted = 0
  other = 0
  first_other = ""
end

function request()
  counter = counter + 1
  local id = string.format("%s-%04x-4000-8000-%012x", run_tag, tid, counter)
  return wrk.format("POST", "/webhook", {
    ["Content-Type"] = "application/json",
    ["X-GitHub-Event"] = "pull_request",
    ["X-GitHub-Delivery"] = id,
    ["X-Hub-Signature-256"] = signature,
  }, body)
end

function response(status, headers, body)
  if status == 202 then
    accepted = accepted + 1
  else
    other = other + 1
    if first_other == "" then first_other = status .. " " .. string.sub(body, 1, 160) end
  end
end

function done(summary, latency, requests)
  local a, o, first = 0, 0, ""
  for _, t in ipairs(threads) do
    a = a + t:get("accepted")
    o = o + t:get("other")
    if first == "" then first = t:get("first_other") end
  end
  if o > 0 then io.write("first answer that was not 202: " .. first .. "\n") end
  local seconds = summary.duration / 1e6
  -- The rate counts only the 202s: an answer that stored nothing is not throughput.
  io.write(string.format("rate=%.0f/s accepted=%d other=%d p50=%.2fms p99=%.2fms\n",
    a / seconds, a, o, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
