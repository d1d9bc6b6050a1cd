-- wrk script: rotate the GET requests of a file, each with its own Authorization header.
-- Usage: wrk -t1 -c50 -d10s --latency -s bench/rotate_requests.lua http://127.0.0.1:9991 -- REQUESTS_FILE
-- REQUESTS_FILE: one request a line, "PATH<TAB>AUTHORIZATION" (bench/get_messages_vs_floor.py writes them).
-- With -t1 one Lua state serves every connection, so the requests go out in the file's order.
local formatted = {}
local n = 0

init = function(args)
  for line in io.lines(args[1]) do
    local path, auth = line:match("^([^\t]+)\t(.+)$")
    if path then
      formatted[#formatted + 1] = wrk.format("GET", path, {["Authorization"] = auth})
    end
  end
  if #formatted == 0 then
    error("no requests in " .. tostring(args[1]))
  end
end

request = function()
  n = n % #formatted + 1
  return formatted[n]
end
