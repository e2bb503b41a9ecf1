-- TodoRead calls (the tool endpoint's no-op read) over SESSIONS sessions that exist.
-- Environment: TODOWEB_TOKEN, SESSIONS (64), RUN (the sessions' key prefix).
local token = os.getenv("TODOWEB_TOKEN")
local sessions = tonumber(os.getenv("SESSIONS") or "64")
local run = os.getenv("RUN") or "bench"
local counter = 0

function request()
  counter = counter + 1
  local path = string.format("/api/v1/sessions/%s-%d/tool", run, counter % sessions)
  return wrk.format("POST", path, {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"},
    '{"tool":"TodoRead","id":"r' .. counter .. '","input":{}}')
end
