// A candidate for integrations/opencode/todoweb.js, tried by test_steering_opencode.py:
// the shipped plugin posts each `todowrite` and ignores the answer; this one posts
// every tool call after it ran and appends what people told the agent (todoweb's
// `?answer=hook` context) to that tool's output, which opencode hands the model.

export const Todoweb = async ({ directory }) => {
  const url = (process.env.TODOWEB_URL || "http://127.0.0.1:8000").replace(/\/+$/, "")
  const token = process.env.TODOWEB_TOKEN
  return {
    "tool.execute.after": async (input, output) => {
      if (!token) return
      try {
        const answer = await fetch(`${url}/api/v1/hooks/opencode?answer=hook`, {
          method: "POST",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: JSON.stringify({
            hook_event_name: "tool.execute.after",
            session_id: input.sessionID,
            tool_name: input.tool,
            tool_input: input.args,
            tool_use_id: input.callID,
            cwd: directory,
          }),
          signal: AbortSignal.timeout(5000),
        })
        const context = (await answer.json())?.hookSpecificOutput?.additionalContext
        if (context && output && typeof output.output === "string") output.output += `\n\n${context}`
      } catch {
        // todoweb is down or unreachable: the agent goes on as if nothing happened
      }
    },
  }
}
