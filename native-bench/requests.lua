-- wrk script of the bench: replays pre-generated requests round-robin and reports one JSON line.
--   wrk ... -s requests.lua <url> -- <file> <post|get|range>
-- <file> holds one request per line: a JSON body to POST to /v2/events (post), a path with its
-- query string to GET (get), or a path, a tab and a Range header value to GET (range).
-- Requests are formatted once in init(), so request() is a lookup.
local requests, next_index = {}, 1

function init(args)
  for line in io.lines(args[1]) do
    if args[2] == "post" then
      requests[#requests + 1] = wrk.format("POST", "/v2/events", { ["Content-Type"] = "application/json" }, line)
    elseif args[2] == "range" then
      local path, range = line:match("^([^\t]+)\t(.+)$")
      requests[#requests + 1] = wrk.format("GET", path, { ["Range"] = range })
    else
      requests[#requests + 1] = wrk.format("GET", line)
    end
  end
end

function request()
  local r = requests[next_index]
  next_index = next_index % #requests + 1
  return r
end

function done(summary, latency)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests":%d,"bytes":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
    summary.requests, summary.bytes, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
