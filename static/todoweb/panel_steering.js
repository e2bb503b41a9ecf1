// Steering on the panel: people's messages to the agent (plan edits and notes) and
// where each stands, the "Message the agent" box, and the agent's questions to people
// (a plan to approve, a tool to allow) with members' answers. Live from the
// `session.messages` and `session.questions` frames; items are copies of the
// <template>s the page renders from _message.html and _question.html, updated in
// place by id (a member typing feedback keeps what they typed). Text only, always.

import { fromTemplate, setText, timeAgo } from "./live.js";
import { postJson } from "./panel_actions.js";

// What the server keeps of each list (todoweb/reads.py), and the longest note it takes.
export const MESSAGES_SHOWN = 20;
export const QUESTIONS_SHOWN = 10;
export const NOTE_MAX_CHARS = 2000;

// --- Pure parts (unit-tested in tests/js/panel_steering.test.mjs) ---

// A message only moves forward: waiting → told → kept. A question: open → expired or
// abandoned (every request waiting for it hung up), or open → allowed / denied.
const MESSAGE_RANK = { waiting: 0, told: 1, kept: 2 };
const QUESTION_RANK = { open: 0, expired: 1, abandoned: 1, allowed: 2, denied: 2 };

// The lists as they stand after `incoming` (a frame, an answer, a fresh read), whatever
// order they arrive in: per id the one further along wins (the incoming one when even),
// ids missing from either side are kept, oldest first, the newest `limit` of them.
export function mergeById(current, incoming, rank, limit) {
  const byId = new Map(current.map((item) => [item.id, item]));
  for (const item of incoming) {
    const known = byId.get(item.id);
    if (!known || (rank[item.state] ?? 0) >= (rank[known.state] ?? 0)) byId.set(item.id, item);
  }
  return [...byId.values()].sort((a, b) => a.id - b.id).slice(-limit);
}

export const mergeMessages = (current, incoming) => mergeById(current, incoming, MESSAGE_RANK, MESSAGES_SHOWN);
export const mergeQuestions = (current, incoming) => mergeById(current, incoming, QUESTION_RANK, QUESTIONS_SHOWN);

// Where a message stands, in the parts the page shows: "told 2 min ago via MCP, kept in revision 4".
export function messageStateParts(message) {
  const told = message.state !== "waiting" && Boolean(message.told_at);
  const kept = message.state === "kept" && message.kept_in !== null && message.kept_in !== undefined;
  let words = "";
  if (message.state === "waiting") words = "waiting for the agent";
  else if (told) words = "told";
  return {
    words,
    toldAt: told ? message.told_at : null,
    via: told && message.told_via ? ` via ${message.told_via}` : "",
    keptWords: kept ? (told ? ", kept in " : "kept in ") : "",
    keptIn: kept ? message.kept_in : null,
  };
}

export function messageStateText(message, now = Date.now()) {
  const parts = messageStateParts(message);
  const time = parts.toldAt ? ` ${timeAgo(parts.toldAt, now)}` : "";
  const kept = parts.keptIn !== null ? `${parts.keptWords}revision ${parts.keptIn}` : "";
  return `${parts.words}${time}${parts.via}${kept}`;
}

// The state a question is in by this browser's clock: an open one past its time is
// expired (the agent's own prompt asks), even before the server says so.
export function questionState(question, now = Date.now()) {
  if (question.state === "open" && Date.parse(question.expires_at) <= now) return "expired";
  return question.state;
}

// "4:05", "1:02:03": what is left of `seconds` (never below 0:00).
export function formatCountdown(seconds) {
  const total = Math.max(0, Math.ceil(seconds));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

export function countdownText(question, now = Date.now()) {
  if (questionState(question, now) !== "open") return "";
  return ` · ${formatCountdown((Date.parse(question.expires_at) - now) / 1000)} left to answer`;
}

export function questionTitle(question) {
  if (question.kind === "plan") return "The agent asks you to approve its plan";
  return `The agent asks to use ${question.tool || "a tool"}`;
}

// Said the same by the server's partial (board/views.py) and its refusal of a late answer.
const ABANDONED = "The agent stopped waiting: its request ended before an answer came, so none is taken.";

const allowWord = (question) => (question.kind === "plan" ? "approved" : "allowed");

export function questionBadge(question, now = Date.now()) {
  const state = questionState(question, now);
  if (state === "open") return "waiting for an answer";
  if (state === "allowed") return allowWord(question);
  return state; // denied, expired, abandoned
}

export function allowLabel(question) {
  return question.kind === "plan" ? "Approve plan" : "Allow";
}

// What came of it: "Approved by alice." / "Denied." / the agent's own prompt asked instead.
// `by` is who decided, when this page may know it (never on a share link).
export function questionOutcome(question, by = "", now = Date.now()) {
  const state = questionState(question, now);
  const who = by ? ` by ${by}` : "";
  if (state === "allowed") return `${allowWord(question)[0].toUpperCase()}${allowWord(question).slice(1)}${who}.`;
  if (state === "denied") return `Denied${who}.`;
  if (state === "expired") return "No answer in time: the agent's own prompt asked instead.";
  if (state === "abandoned") return ABANDONED;
  return "";
}

// A note as the server takes it: something besides spaces, at most NOTE_MAX_CHARS
// characters (counted as Python counts them: code points). The problem, or "".
export function noteProblem(text) {
  if (!text.trim()) return "Write something for the agent first.";
  const length = [...text].length;
  if (length > NOTE_MAX_CHARS) {
    return `Your message is ${length.toLocaleString("en")} characters long: at most ${NOTE_MAX_CHARS.toLocaleString("en")} fit. Shorten it and send again.`;
  }
  return "";
}

// --- The page ---

const $ = (id) => document.getElementById(id);

// Put `items` in `list` in order, each element made once by `make` and then updated
// by `update`; an element only moves when the order changed (moving one loses focus).
function reconcile(list, items, make, update) {
  const existing = new Map([...list.children].map((node) => [node.dataset.id, node]));
  const wanted = items.map((item) => {
    const node = existing.get(String(item.id)) || make(item);
    existing.delete(String(item.id));
    update(node, item);
    return node;
  });
  for (const node of existing.values()) node.remove();
  wanted.forEach((node, index) => {
    if (list.children[index] !== node) list.insertBefore(node, list.children[index] || null);
  });
}

function setAgo(node, iso, now) {
  node.hidden = !iso;
  if (!iso) return;
  node.setAttribute("datetime", iso);
  node.title = new Date(iso).toLocaleString();
  setText(node, timeAgo(iso, now));
}

export function setupSteering({ config, onJump, latestRevision }) {
  const member = Boolean(config.actions);
  let messages = mergeMessages([], config.messages || []);
  let questions = mergeQuestions([], config.questions || []);
  // Who decided each question, where this page may know it: the server tells members
  // on the first render; this page knows its own answers.
  const deciders = new Map(Object.entries(config.deciders || {}).map(([id, by]) => [Number(id), by]));
  const shownStates = new Map(questions.map((q) => [q.id, questionState(q)]));
  const announcer = $("steering-announce");

  const jumpable = (n) => Number.isInteger(n) && n >= 1 && n <= latestRevision();
  const wireJump = (button) =>
    button.addEventListener("click", () => {
      const n = Number(button.dataset.revision);
      if (jumpable(n)) onJump(n);
    });

  // Messages to the agent

  function makeMessage(message) {
    const item = fromTemplate("message-template");
    item.dataset.id = String(message.id);
    item.classList.add(`kind-${message.kind}`);
    setText(item.querySelector(".message-kind"), message.kind === "edit" ? "Plan edit" : "Note");
    const revision = item.querySelector(".message-revision");
    if (message.kind === "edit" && message.revision) {
      revision.dataset.revision = String(message.revision);
      setText(revision, `revision ${message.revision}`);
    } else revision.remove();
    const text = item.querySelector(".message-text");
    if (message.text) setText(text, message.text);
    else text.remove();
    return item;
  }

  function updateMessage(item, message, now = Date.now()) {
    for (const state of Object.keys(MESSAGE_RANK)) item.classList.toggle(`state-${state}`, state === message.state);
    const at = item.querySelector(".message-at");
    setAgo(at, message.at, now);
    const parts = messageStateParts(message);
    setText(item.querySelector(".state-words"), parts.words);
    setAgo(item.querySelector(".state-time"), parts.toldAt, now);
    setText(item.querySelector(".state-via"), parts.via);
    const kept = item.querySelector(".state-kept");
    kept.hidden = parts.keptIn === null;
    setText(item.querySelector(".kept-words"), parts.keptWords);
    const jump = item.querySelector(".kept-jump");
    jump.dataset.revision = parts.keptIn === null ? "" : String(parts.keptIn);
    setText(jump, parts.keptIn === null ? "" : `revision ${parts.keptIn}`);
    for (const button of item.querySelectorAll("[data-revision]")) {
      if (!button.dataset.wired) {
        button.dataset.wired = "true";
        wireJump(button);
      }
      button.disabled = !jumpable(Number(button.dataset.revision));
    }
  }

  function renderMessages() {
    $("messages-empty").hidden = messages.length > 0;
    reconcile($("messages"), messages, makeMessage, (item, message) => updateMessage(item, message));
  }

  // Questions from the agent (newest first: the one waiting is on top)

  function makeQuestion(question) {
    const item = fromTemplate("question-template");
    item.dataset.id = String(question.id);
    item.classList.add(`kind-${question.kind}`);
    setText(item.querySelector(".question-title"), questionTitle(question));
    setText(item.querySelector(".question-summary"), question.kind === "plan" ? "The plan" : "What it would do");
    const text = item.querySelector(".question-text");
    if (question.text) setText(text, question.text);
    else text.remove();
    const detail = item.querySelector(".question-detail");
    if (question.detail) setText(detail, question.detail);
    else detail.remove();
    return item;
  }

  function wireQuestion(item) {
    const form = item.querySelector(".question-form");
    if (!form || form.dataset.wired) return;
    form.dataset.wired = "true";
    const status = form.querySelector(".question-status");
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const button = event.submitter;
      const id = Number(item.dataset.id);
      const buttons = [...form.querySelectorAll("button")];
      buttons.forEach((b) => (b.disabled = true));
      button.setAttribute("aria-busy", "true");
      status.classList.remove("error");
      setText(status, "");
      try {
        const answered = await postJson(config.actions.answer, config.csrfToken, {
          question: id,
          decision: button.value,
          feedback: form.querySelector(".feedback-input").value,
        });
        deciders.set(id, "you");
        applyQuestions([answered]);
        item.focus();
      } catch (error) {
        status.classList.add("error");
        setText(status, error.message);
      } finally {
        buttons.forEach((b) => (b.disabled = false));
        button.removeAttribute("aria-busy");
      }
    });
  }

  function updateQuestion(item, question, now = Date.now()) {
    const state = questionState(question, now);
    for (const name of Object.keys(QUESTION_RANK)) item.classList.toggle(`state-${name}`, name === state);
    setText(item.querySelector(".question-badge"), questionBadge(question, now));
    setAgo(item.querySelector(".question-at"), question.at, now);
    setText(item.querySelector(".countdown"), countdownText(question, now));
    const body = item.querySelector(".question-body");
    // Open while it waits; folded once decided (a person may unfold it again).
    const before = item.dataset.state;
    if (before !== state) {
      body.open = state === "open";
      item.dataset.state = state;
    }
    setText(item.querySelector(".question-outcome"), questionOutcome(question, deciders.get(question.id), now));
    const feedback = item.querySelector(".question-feedback");
    feedback.hidden = !question.feedback;
    setText(item.querySelector(".feedback-text"), question.feedback);
    const form = item.querySelector(".question-form");
    if (form) {
      wireQuestion(item); // the page's own items were not made here
      form.hidden = state !== "open";
      setText(form.querySelector("button[value=allow]"), allowLabel(question));
    }
  }

  function announceChanges(now) {
    for (const question of questions) {
      const state = questionState(question, now);
      const before = shownStates.get(question.id);
      shownStates.set(question.id, state);
      if (before === state) continue;
      if (state === "open") setText(announcer, `${questionTitle(question)}.`);
      else if (before !== undefined) setText(announcer, questionOutcome(question, deciders.get(question.id), now));
    }
  }

  function renderQuestions(now = Date.now()) {
    $("questions-section").hidden = questions.length === 0;
    const newestFirst = [...questions].reverse();
    reconcile($("questions"), newestFirst, makeQuestion, (item, question) => updateQuestion(item, question, now));
    $("questions-section").classList.toggle("waiting", questions.some((q) => questionState(q, now) === "open"));
    announceChanges(now);
  }

  function applyMessages(incoming) {
    messages = mergeMessages(messages, incoming);
    renderMessages();
  }

  function applyQuestions(incoming) {
    questions = mergeQuestions(questions, incoming);
    renderQuestions();
  }

  // The "Message the agent" box (members only)

  const form = $("note-form");
  if (form && member) {
    const input = $("note-text");
    const status = $("note-status");
    const say = (text, error = false) => {
      status.classList.toggle("error", error);
      setText(status, text);
      if (error) input.setAttribute("aria-invalid", "true");
      else input.removeAttribute("aria-invalid");
    };
    input.addEventListener("input", () => {
      if (status.classList.contains("error")) say("");
    });
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const text = input.value;
      const problem = noteProblem(text);
      if (problem) {
        say(problem, true);
        input.focus();
        return;
      }
      const button = $("note-send");
      button.disabled = true;
      button.setAttribute("aria-busy", "true");
      say("Sending…");
      try {
        const message = await postJson(config.actions.note, config.csrfToken, { text });
        applyMessages([message]);
        input.value = "";
        say("Sent: the agent is told on its next call.");
      } catch (error) {
        say(error.message, true);
        input.focus();
      } finally {
        button.disabled = false;
        button.removeAttribute("aria-busy");
      }
    });
  }

  // A fresh read of both lists (after a reconnect: frames sent while away are lost).
  let refreshing = null;
  async function refresh() {
    if (refreshing) {
      refreshing.again = true;
      return;
    }
    refreshing = { again: false };
    try {
      const response = await fetch(config.steeringUrl, {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
      });
      if (!response.ok) return;
      const fresh = await response.json();
      for (const [id, by] of Object.entries(fresh.deciders || {})) deciders.set(Number(id), by);
      applyMessages(fresh.messages);
      applyQuestions(fresh.questions);
    } catch {
      // The next frame brings both lists whole.
    } finally {
      const again = refreshing.again;
      refreshing = null;
      if (again) refresh();
    }
  }

  // A new revision of the agent's keeps the edits made before it; no event says so
  // when the edit was told by another route (a hook, the channel): read the list again.
  function revisionArrived(data) {
    renderMessages();
    const keeps = (m) => m.kind === "edit" && m.state !== "kept" && m.revision < data.revision;
    if (data.author === "agent" && messages.some(keeps)) refresh();
  }

  function tick(now) {
    for (const item of $("messages").children) {
      const message = messages.find((m) => String(m.id) === item.dataset.id);
      if (message) updateMessage(item, message, now);
    }
    renderQuestions(now);
  }

  renderMessages();
  renderQuestions();
  return {
    messages: applyMessages,
    questions: applyQuestions,
    refresh,
    tick,
    // The plan moved on: a "kept in revision N" may now be one the slider reaches.
    revisionArrived,
  };
}
