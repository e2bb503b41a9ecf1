-- TodoWrite calls of ITEMS steps, each with a new tool call id, spread over SESSIONS
-- sessions that every connection writes to (so writers of one session do collide).
-- Environment: TODOWEB_TOKEN, ITEMS (10), SESSIONS (64), RUN (a prefix for keys).
local token = os.getenv("TODOWEB_TOKEN")
local items = tonumber(os.getenv("ITEMS") or "10")
local sessions = tonumber(os.getenv("SESSIONS") or "64")
local run = os.getenv("RUN") or "bench"
local threads = 0

-- setup runs in wrk's main thread: each thread gets its number (the table of threads
-- is not visible inside a thread's own interpreter).
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end

local counter = 0

function request()
  counter = counter + 1
  -- 97 is prime to 64: each thread's calls go round every session, the threads apart.
  local n = counter * 97 + tid * 31
  local done = counter % (items + 1)
  local todos = {}
  for k = 0, items - 1 do
    local status = "pending"
    if k < done then status = "completed" elseif k == done then status = "in_progress" end
    todos[#todos + 1] = string.format(
      '{"content":"Step %d of the plan","status":"%s","activeForm":"Doing step %d"}', k, status, k)
  end
  local body = string.format(
    '{"type":"tool_use","id":"toolu_%s_%d_%d","name":"TodoWrite","input":{"todos":[%s]}}',
    run, tid, counter, table.concat(todos, ","))
  local path = string.format("/api/v1/sessions/%s-%d/tool", run, n % sessions)
  return wrk.format("POST", path, {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"}, body)
end
