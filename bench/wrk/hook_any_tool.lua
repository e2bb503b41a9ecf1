-- Claude Code's PostToolUse hook for a tool that is not a todo tool (a Bash call), as
-- a matcher of `*` sends it after every tool: nothing to record, nothing to tell. With
-- PEER=1, wrapped as the peer dashboard's send_event.py posts it to its /events.
-- Environment: TODOWEB_TOKEN, SESSIONS (64), RUN (the sessions' key prefix), PEER.
local token = os.getenv("TODOWEB_TOKEN") or ""
local sessions = tonumber(os.getenv("SESSIONS") or "64")
local run = os.getenv("RUN") or "bench"
local peer = os.getenv("PEER") == "1"
local counter = 0

function request()
  counter = counter + 1
  local session = string.format("%s-%d", run, counter % sessions)
  local event = string.format(
    '{"session_id":"%s","transcript_path":"/tmp/t.jsonl","cwd":"/work/shop","permission_mode":"default",' ..
    '"hook_event_name":"PostToolUse","tool_name":"Bash","tool_use_id":"toolu_%d",' ..
    '"tool_input":{"command":"ls -la","description":"List files"},' ..
    '"tool_response":{"stdout":"total 0","stderr":"","interrupted":false}}',
    session, counter)
  if peer then
    local body = string.format(
      '{"source_app":"bench","session_id":"%s","hook_event_type":"PostToolUse","payload":%s,' ..
      '"timestamp":%d,"model_name":"","tool_name":"Bash","tool_use_id":"toolu_%d"}',
      session, event, os.time() * 1000, counter)
    return wrk.format("POST", "/events", {["Content-Type"] = "application/json"}, body)
  end
  return wrk.format("POST", "/api/v1/hooks/claude-code",
    {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"}, event)
end
