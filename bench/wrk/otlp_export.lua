-- One OTLP export, posted again and again: the body is read from BODY_FILE (made by
-- bench/otlp.py), sent as CONTENT_TYPE to /v1/logs.
-- Environment: TODOWEB_TOKEN, BODY_FILE, CONTENT_TYPE (application/json or application/x-protobuf).
local token = os.getenv("TODOWEB_TOKEN")
local file = assert(io.open(os.getenv("BODY_FILE"), "rb"))
local body = file:read("*a")
file:close()
local content_type = os.getenv("CONTENT_TYPE") or "application/json"

function request()
  return wrk.format("POST", "/v1/logs", {["Authorization"] = "Bearer " .. token, ["Content-Type"] = content_type}, body)
end
