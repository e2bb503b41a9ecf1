-- Claude Code's PostToolUse hook event for a TodoWrite of ITEMS steps, each with a new
-- tool call id, over SESSIONS sessions: to todoweb's hook endpoint, or (PEER=1)
-- wrapped as the peer dashboard's send_event.py posts it to its /events.
-- Environment: TODOWEB_TOKEN, ITEMS (10), SESSIONS (64), RUN (a prefix for keys), PEER.
local token = os.getenv("TODOWEB_TOKEN") or ""
local items = tonumber(os.getenv("ITEMS") or "10")
local sessions = tonumber(os.getenv("SESSIONS") or "64")
local run = os.getenv("RUN") or "bench"
local peer = os.getenv("PEER") == "1"
local threads = 0

function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end

local counter = 0

function request()
  counter = counter + 1
  local n = counter * 97 + tid * 31
  local done = counter % (items + 1)
  local todos = {}
  for k = 0, items - 1 do
    local status = "pending"
    if k < done then status = "completed" elseif k == done then status = "in_progress" end
    todos[#todos + 1] = string.format(
      '{"content":"Step %d of the plan","status":"%s","activeForm":"Doing step %d"}', k, status, k)
  end
  local session = string.format("%s-%d", run, n % sessions)
  local event = string.format(
    '{"session_id":"%s","transcript_path":"/tmp/%s.jsonl","cwd":"/work/shop","permission_mode":"default",' ..
    '"hook_event_name":"PostToolUse","tool_name":"TodoWrite","tool_use_id":"toolu_%s_%d_%d",' ..
    '"tool_input":{"todos":[%s]},"tool_response":{"oldTodos":[],"newTodos":[%s]}}',
    session, session, run, tid, counter, table.concat(todos, ","), table.concat(todos, ","))
  if peer then
    local body = string.format(
      '{"source_app":"bench","session_id":"%s","hook_event_type":"PostToolUse","payload":%s,' ..
      '"timestamp":%d,"model_name":"","tool_name":"TodoWrite","tool_use_id":"toolu_%s_%d_%d"}',
      session, event, os.time() * 1000, run, tid, counter)
    return wrk.format("POST", "/events", {["Content-Type"] = "application/json"}, body)
  end
  return wrk.format("POST", "/api/v1/hooks/claude-code",
    {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"}, event)
end
