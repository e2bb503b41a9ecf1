// todoweb for opencode: each tool call is posted to todoweb after it ran. A `todowrite`
// call is recorded, so the board shows opencode's todo list live; and what people
// told the agent on the board (an edit of its plan, a note) is appended to the output
// of its next tool call of any kind, which opencode then hands the model.
//
// Copy this file to .opencode/plugins/ in your project (or ~/.config/opencode/plugins/
// for every project) and start opencode with TODOWEB_TOKEN set (and TODOWEB_URL when
// todoweb is not at http://127.0.0.1:8000). The board session is opencode's session id.
// The plugin never gets in opencode's way: it gives up after 5 seconds and ignores
// every error (a stopped server or a wrong token changes nothing in opencode).

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
