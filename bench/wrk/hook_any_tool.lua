-- Claude Code's PostToolUse hook for a tool that is not a todo tool (a Bash call), as
-- a matcher of `*` sends it after every tool: nothing to record, nothing to tell.
-- Environment: TODOWEB_TOKEN, SESSIONS (64), RUN (the sessions' key prefix).
local token = os.getenv("TODOWEB_TOKEN")
local sessions = tonumber(os.getenv("SESSIONS") or "64")
local run = os.getenv("RUN") or "bench"
local counter = 0

function request()
  counter = counter + 1
  local body = string.format(
    '{"session_id":"%s-%d","transcript_path":"/tmp/t.jsonl","cwd":"/work/shop","permission_mode":"default",' ..
    '"hook_event_name":"PostToolUse","tool_name":"Bash","tool_use_id":"toolu_%d",' ..
    '"tool_input":{"command":"ls -la","description":"List files"},' ..
    '"tool_response":{"stdout":"total 0","stderr":"","interrupted":false}}',
    run, counter % sessions, counter)
  return wrk.format("POST", "/api/v1/hooks/claude-code",
    {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"}, body)
end
