-- wrk script of the bench: replays pre-generated requests round-robin and reports one JSON line.
--   wrk ... -s requests.lua <url> -- <file> <post|post-ids|get|range> [run tag]
-- <file> holds one request per line: a JSON body to POST to /v2/events (post), the same with one
-- `{{n}}` slot that becomes an id unique to each request (post-ids), a path with its query string
-- to GET (get), or a path, a tab and a Range header value to GET (range).
-- Requests are formatted once in init(), so request() is a lookup; in post-ids mode it also
-- joins the request up to the slot, a 9-digit count and the rest into one new string (~1.2 us
-- a request in wrk's LuaJIT, against ~0.01 us for the lookup alone). The id is the run
-- tag (distinct for each wrk run of a bench), wrk's thread number and the count, so no two
-- requests of a bench carry the same one; a slot of fixed width keeps Content-Length exact.
-- wrk's scripting reference: SCRIPTING in wrk's documentation (setup, init, request, done).
local requests, tails, next_index, sent = {}, {}, 1, 0
local SLOT, COUNT_DIGITS = "{{n}}", 9
-- The count is written as three 3-digit groups looked up here: string.format on each request
-- cost about as much as the join itself (1.0 of 2.2 us a request in wrk's LuaJIT).
local GROUPS = {}
for n = 0, 999 do GROUPS[n] = string.format("%03d", n) end
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end

function init(args)
  local mode, tag = args[2], (args[3] or "") .. "-" .. tostring(thread_number or 1) .. "-"
  local json = { ["Content-Type"] = "application/json" }
  for line in io.lines(args[1]) do
    if mode == "post" then
      requests[#requests + 1] = wrk.format("POST", "/v2/events", json, line)
    elseif mode == "post-ids" then
      local first, last = line:find(SLOT, 1, true)
      local before, after = line:sub(1, first - 1) .. tag, line:sub(last + 1)
      local whole = wrk.format("POST", "/v2/events", json, before .. string.rep("0", COUNT_DIGITS) .. after)
      requests[#requests + 1] = whole:sub(1, #whole - COUNT_DIGITS - #after)
      tails[#requests] = after
    elseif mode == "range" then
      local path, range = line:match("^([^\t]+)\t(.+)$")
      requests[#requests + 1] = wrk.format("GET", path, { ["Range"] = range })
    else
      requests[#requests + 1] = wrk.format("GET", line)
    end
  end
end

function request()
  local i = next_index
  next_index = i % #requests + 1
  local tail = tails[i]
  if tail == nil then return requests[i] end
  sent = sent + 1
  local n = sent
  local units = n % 1000
  n = (n - units) / 1000
  local thousands = n % 1000
  n = (n - thousands) / 1000
  return requests[i] .. GROUPS[n % 1000] .. GROUPS[thousands] .. GROUPS[units] .. tail
end

function done(summary, latency)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests":%d,"bytes":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
    summary.requests, summary.bytes, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
