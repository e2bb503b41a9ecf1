// What members do from the panel's header: rename, close or reopen, archive, and
// create or revoke share links. Each posts JSON to /s/<id>/actions/… (board_actions.py)
// with the page's CSRF token; the server then tells every watcher over the websocket.

import { setText } from "./live.js";

export class ActionError extends Error {
  constructor(message, status, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

// POST JSON; the parsed answer, or an ActionError carrying the status and the error body.
export async function postJson(url, csrfToken, body = {}, headers = {}) {
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken, ...headers },
      body: JSON.stringify(body),
    });
  } catch {
    throw new ActionError("The server could not be reached. Check the connection and try again.", 0, null);
  }
  const answer = (response.headers.get("Content-Type") || "").includes("application/json")
    ? await response.json()
    : null;
  if (response.ok) return answer;
  if (!answer) {
    // Django's CSRF refusal is a page, not JSON: the login or the page is stale.
    throw new ActionError("Your login has expired or this page is out of date: reload the page and try again.", response.status, null);
  }
  throw new ActionError(answer.error?.message || `The server answered ${response.status}.`, response.status, answer);
}

const $ = (id) => document.getElementById(id);

function linksText(count) {
  return `${count} active link${count === 1 ? "" : "s"}`;
}

export function setupSessionActions({ config, current, onData }) {
  const status = $("action-status");
  const say = (text, { error = false } = {}) => {
    status.classList.toggle("error", error);
    setText(status, "");
    // A fresh text node, so that screen readers announce a repeat of the same message.
    requestAnimationFrame(() => setText(status, text));
  };
  const run = async (button, action) => {
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
    try {
      await action();
    } catch (error) {
      say(error.message, { error: true });
    } finally {
      button.disabled = false;
      button.removeAttribute("aria-busy");
    }
  };
  const post = (name, body) => postJson(config.actions[name], config.csrfToken, body);

  // Rename: the title turns into a form in place.
  const title = $("title");
  const renameButton = $("rename-button");
  const form = $("rename-form");
  const input = $("rename-input");
  const closeRename = () => {
    form.hidden = true;
    title.hidden = false;
    renameButton.setAttribute("aria-expanded", "false");
    renameButton.focus();
  };
  renameButton.setAttribute("aria-expanded", "false");
  renameButton.addEventListener("click", () => {
    const session = current();
    input.value = session.title || "";
    input.placeholder = session.key;
    form.hidden = false;
    title.hidden = true;
    renameButton.setAttribute("aria-expanded", "true");
    input.focus();
    input.select();
  });
  $("rename-cancel").addEventListener("click", closeRename);
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") closeRename();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    run(form.querySelector("button[type=submit]"), async () => {
      const data = await post("rename", { title: input.value });
      onData(data);
      closeRename();
      say(data.session.title ? `Renamed to “${data.session.title}”.` : "Title cleared: the session key is shown.");
    });
  });

  // Close and reopen.
  const closeButton = $("close-button");
  const reopenButton = $("reopen-button");
  closeButton.addEventListener("click", () =>
    run(closeButton, async () => {
      onData(await post("close"));
      reopenButton.focus();
      say("Session closed.");
    }),
  );
  reopenButton.addEventListener("click", () =>
    run(reopenButton, async () => {
      onData(await post("reopen"));
      closeButton.focus();
      say("Session reopened.");
    }),
  );

  // Archive, after a confirmation.
  const dialog = $("archive-dialog");
  $("archive-button").addEventListener("click", () => dialog.showModal());
  dialog.addEventListener("close", () => {
    if (dialog.returnValue !== "archive") return;
    run($("archive-button"), async () => {
      const answer = await post("archive");
      say("Session archived. Going back to the sessions…");
      location.assign(answer.dashboard);
    });
  });

  // Share links: one shown once at creation (only its digest is kept), revoked all at once.
  const shareButton = $("share-button");
  const shareBox = $("share-box");
  const count = $("share-count");
  const revoke = $("share-revoke");
  const showCount = (n) => {
    count.dataset.count = String(n);
    setText(count, linksText(n));
    revoke.disabled = n === 0;
  };
  shareButton.addEventListener("click", () => {
    shareBox.hidden = !shareBox.hidden;
    shareButton.setAttribute("aria-expanded", String(!shareBox.hidden));
    if (!shareBox.hidden) $("share-expires").focus();
  });
  const create = $("share-create");
  create.addEventListener("click", () =>
    run(create, async () => {
      const link = await post("share", { expires_in: Number($("share-expires").value) });
      $("share-result").hidden = false;
      $("share-url").value = link.url;
      setText($("share-expiry"), `(until ${new Date(link.expires_at).toLocaleString()})`);
      showCount(link.active_links);
      $("share-url").focus();
      $("share-url").select();
      say("Share link created: copy it now, it is shown only once.");
    }),
  );
  $("share-copy").addEventListener("click", async () => {
    const url = $("share-url").value;
    try {
      await navigator.clipboard.writeText(url);
      say("Link copied.");
    } catch {
      $("share-url").select();
      say("Copying is not allowed here: the link is selected, copy it with the keyboard.");
    }
  });
  revoke.addEventListener("click", async () => {
    await run(revoke, async () => {
      const answer = await post("share-revoke");
      $("share-result").hidden = true;
      $("share-url").value = "";
      count.dataset.count = String(answer.active_links);
      setText(count, linksText(answer.active_links));
      say(`Revoked ${answer.revoked} link${answer.revoked === 1 ? "" : "s"}: they no longer open this session.`);
      shareButton.focus();
    });
    revoke.disabled = count.dataset.count === "0";
  });

  return {
    // The session's state moved (here or elsewhere): offer the other of close/reopen.
    showState(state) {
      const closed = state === "closed";
      const focusMoves = document.activeElement === (closed ? closeButton : reopenButton);
      closeButton.hidden = closed;
      reopenButton.hidden = !closed;
      if (focusMoves) (closed ? reopenButton : closeButton).focus();
    },
    say,
    clear: () => setText(status, ""),
  };
}
