-- TodoWrite calls of ITEMS steps over SESSIONS sessions, each session's plan moving one
-- step on per write and completing every ITEMS + 1 writes (then starting over): a
-- session.completed every ITEMS + 1 writes of a session, and a session.created for
-- each session's first.
-- STAGGER=1 (the default) starts each session's plan at a step of its own, as agents
-- working apart do, so that completions come spread out; STAGGER=0 moves every
-- session in step, so that all of them complete within the same SESSIONS writes.
-- Environment: TODOWEB_TOKEN, ITEMS (10), SESSIONS (64), RUN (a prefix for keys), THREADS (2), STAGGER (1),
-- CALLS (RUN).
local token = os.getenv("TODOWEB_TOKEN")
local items = tonumber(os.getenv("ITEMS") or "10")
local sessions = tonumber(os.getenv("SESSIONS") or "64")
local run = os.getenv("RUN") or "bench"
local nthreads = tonumber(os.getenv("THREADS") or "2")
local stagger = os.getenv("STAGGER") ~= "0"
-- A prefix for the tool call ids (RUN unless given): a run that goes on with the
-- sessions of an earlier one needs calls of its own, or they would be replays.
local calls = os.getenv("CALLS") or run
local count = 0

function setup(thread)
  thread:set("tid", count)
  count = count + 1
end

local counter = 0

function request()
  counter = counter + 1
  -- Each thread writes to its own sessions, each session's writes in order.
  local session = tid + nthreads * (counter % (sessions / nthreads))
  local step = math.floor(counter / (sessions / nthreads))
  if stagger then step = step + session end
  local done = step % (items + 1)
  local todos = {}
  for k = 0, items - 1 do
    local status = "pending"
    if k < done then status = "completed" elseif k == done then status = "in_progress" end
    todos[#todos + 1] = string.format(
      '{"content":"Step %d of the plan","status":"%s","activeForm":"Doing step %d"}', k, status, k)
  end
  local body = string.format(
    '{"type":"tool_use","id":"toolu_%s_%d_%d","name":"TodoWrite","input":{"todos":[%s]}}',
    calls, tid, counter, table.concat(todos, ","))
  local path = string.format("/api/v1/sessions/%s-%d/tool", run, session)
  return wrk.format("POST", path, {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"}, body)
end
