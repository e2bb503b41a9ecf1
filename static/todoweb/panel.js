// The session panel: server-rendered first, then kept live from /ws/sessions/<id>/.
// Revisions only go forward; the timeline replays older ones on request.
import {
  LiveSocket,
  el,
  formatDuration,
  readConfig,
  setBadge,
  setProgress,
  setText,
  showConnection,
  timeAgo,
} from "./live.js";

const config = readConfig("panel-config");
const $ = (id) => document.getElementById(id);
const panel = $("panel");
const timeline = $("timeline");
const liveButton = $("live-button");
const replayNote = $("replay-note");

let latest = config.initial; // newest data received (never goes back)
let shownRevision = latest.revision; // what the checklist shows (latest, or a replayed one)
let replaying = false;
let lastAnnounced = announcement(latest);
const revisionCache = new Map();

function label(status) {
  return status.replace("_", " ");
}

function stepItem(step, live) {
  const inProgress = step.status === "in_progress";
  // A replayed revision shows no running clock: its step is not running now.
  const running = live && inProgress && step.started_at;
  const body = el(
    "span",
    { class: "body" },
    el("span", { class: "sr-only" }, `${label(step.status)}: `),
    el("span", { class: "content" }, step.content),
    inProgress && step.active_form
      ? el("span", { class: "active-form" }, el("span", { class: "spinner", "aria-hidden": "true" }), step.active_form)
      : null,
  );
  const duration = el(
    "span",
    { class: "duration", "data-started": running ? step.started_at : null },
    running
      ? formatDuration((Date.now() - Date.parse(step.started_at)) / 1000)
      : formatDuration(step.duration_s),
  );
  return el(
    "li",
    { class: `step status-${step.status}`, "data-id": step.id },
    el("span", { class: "icon", "aria-hidden": "true" }),
    body,
    duration,
  );
}

function renderSteps(todos, live) {
  const items = todos.length ? todos.map((step) => stepItem(step, live)) : [el("li", { class: "step empty" }, "No steps yet.")];
  $("steps").replaceChildren(...items);
}

function renderList(sectionId, listId, items, build) {
  $(sectionId).hidden = items.length === 0;
  $(listId).replaceChildren(...items.map(build));
}

function renderCounts(counts) {
  const pills = [];
  for (const [name, n] of Object.entries(counts)) {
    if (name !== "total" && n) pills.push(el("span", { class: `pill status-${name}` }, `${n} ${label(name)}`), " ");
  }
  $("counts").replaceChildren(...pills);
}

// The session's header always shows the present; the body shows `data`.
function renderHeader(info) {
  setText($("title"), info.title || info.key);
  document.title = `${info.title || info.key} · todoweb`;
  setBadge($("state"), info.state);
  setText($("dialect"), info.dialect || "—");
  $("updated").setAttribute("datetime", info.updated_at);
  setText($("updated"), timeAgo(info.updated_at));
}

function renderBody(data, live = true) {
  shownRevision = data.revision;
  setText($("revision"), data.revision);
  setProgress($("bar"), data.counts.completed, data.counts.total);
  setText($("count"), `${data.counts.completed}/${data.counts.total}`);
  renderCounts(data.counts);
  renderSteps(data.todos, live);
  renderList("dropped-section", "dropped", data.dropped, (step) =>
    el("li", {}, el("span", { class: "content" }, step.content), " ", el("span", { class: "was" }, `(was ${label(step.status)})`)),
  );
  renderList("warnings-section", "warnings", data.warnings, (w) => el("li", {}, w.message));
}

function announcement(data) {
  const { completed, total } = data.counts;
  const current = data.todos.find((step) => step.status === "in_progress");
  const now = current ? ` Now: ${current.active_form || current.content}.` : "";
  return `${completed} of ${total} steps completed.${now}`;
}

function announce(data) {
  const text = announcement(data);
  if (text !== lastAnnounced) {
    lastAnnounced = text;
    setText($("announce"), text);
  }
}

function updateTimeline() {
  const n = latest.revision;
  $("timeline-section").hidden = n === 0;
  timeline.max = String(Math.max(1, n));
  setText($("timeline-max"), n);
  if (!replaying) {
    timeline.value = String(n);
    setText($("timeline-value"), n);
  } else {
    replayNote.hidden = false;
    setText(replayNote, `Replaying revision ${shownRevision} of ${n}. The plan has moved on: use “Back to live”.`);
  }
}

function applySnapshot(event) {
  // Never go back: an older snapshot (a late event, a lagging replica) is dropped.
  if (event.revision < latest.revision) return;
  latest = event;
  renderHeader(event.session);
  if (!replaying) {
    renderBody(event);
    announce(event);
  }
  updateTimeline();
}

function applyState(event) {
  if (event.revision < latest.revision) return;
  latest = { ...latest, session: { ...latest.session, state: event.state, title: event.title } };
  setBadge($("state"), event.state);
  setText($("title"), event.title || latest.session.key);
  document.title = `${event.title || latest.session.key} · todoweb`;
}

function goLive() {
  replaying = false;
  panel.dataset.mode = "live";
  replayNote.hidden = true;
  liveButton.hidden = true;
  renderBody(latest);
  updateTimeline();
}

async function fetchRevision(n) {
  if (!revisionCache.has(n)) {
    const url = config.revisionUrl.replace("{n}", String(n));
    const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    if (!response.ok) throw new Error(`revision ${n}: HTTP ${response.status}`);
    revisionCache.set(n, await response.json());
  }
  return revisionCache.get(n);
}

async function replay(n) {
  setText($("timeline-value"), n);
  if (n >= latest.revision) {
    goLive();
    return;
  }
  replaying = true;
  panel.dataset.mode = "replay";
  liveButton.hidden = false;
  let data;
  try {
    data = await fetchRevision(n);
  } catch (error) {
    replayNote.hidden = false;
    setText(replayNote, `Could not load revision ${n}.`);
    return;
  }
  // The slider may have moved on while the request was out.
  if (!replaying || Number(timeline.value) !== n) return;
  renderBody(data, false);
  replayNote.hidden = false;
  const when = data.at ? ` (${new Date(data.at).toLocaleString()})` : "";
  setText(replayNote, `Replaying revision ${n} of ${latest.revision}${when}.`);
}

timeline.addEventListener("input", () => replay(Number(timeline.value)));
liveButton.addEventListener("click", () => {
  goLive();
  timeline.focus();
});

// Running clocks: the duration of steps in progress and "updated … ago".
function tick() {
  const now = Date.now();
  for (const node of document.querySelectorAll(".duration[data-started]")) {
    setText(node, formatDuration((now - Date.parse(node.dataset.started)) / 1000));
  }
  const updated = $("updated");
  setText(updated, timeAgo(updated.getAttribute("datetime"), now));
}
setInterval(tick, 1000);
tick();

new LiveSocket(config.ws, {
  onMessage(message) {
    if (message.type === "session.snapshot") applySnapshot(message);
    else if (message.type === "session.state") applyState(message);
    else if (message.type === "share.ended") showConnection(panel, $("conn"), "ended");
    // The first message on every connection is the current snapshot.
    if (panel.dataset.connection !== "live" && message.type === "session.snapshot") {
      showConnection(panel, $("conn"), "live");
    }
  },
  onStatus(status) {
    showConnection(panel, $("conn"), status);
  },
});
