// The session panel: server-rendered first, then kept live from /ws/sessions/<id>/.
// Revisions only go forward; the scrubber replays older ones, and moves the cursor on
// the timeline chart. Members also act from here (panel_actions.js, panel_editor.js)
// and steer the agent (panel_steering.js: messages, notes, answers to its questions);
// a share link's holder gets neither the controls nor their URLs.
import {
  LiveSocket,
  el,
  formatDuration,
  fromTemplate,
  readConfig,
  setBadge,
  setProgress,
  setText,
  showConnection,
  timeAgo,
} from "./live.js";
import { setupSessionActions } from "./panel_actions.js";
import { PlanEditor } from "./panel_editor.js";
import { foldPlan, foldedNow } from "./panel_fold.js";
import { setupSteering } from "./panel_steering.js";
import { TimelineChart } from "./panel_timeline.js";

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
  const item = fromTemplate("step-template");
  item.classList.add(`status-${step.status}`);
  item.dataset.id = step.id;
  setText(item.querySelector(".sr-only"), `${label(step.status)}: `);
  setText(item.querySelector(".content"), step.content);
  const reopened = item.querySelector(".reopened-tag");
  if (step.reopened) setText(reopened, `↺ reopened${step.reopened > 1 ? ` ${step.reopened}×` : ""}`);
  else reopened.remove();
  const activeForm = item.querySelector(".active-form");
  if (inProgress && step.active_form) activeForm.append(step.active_form);
  else activeForm.remove();
  const duration = item.querySelector(".duration");
  if (running) duration.dataset.started = step.started_at;
  setText(
    duration,
    running ? formatDuration((Date.now() - Date.parse(step.started_at)) / 1000) : formatDuration(step.duration_s),
  );
  return item;
}

// --- Long plans: finished steps fold behind one toggle; "Jump to current step" ---

const stepsList = $("steps");
const jumpButton = $("jump-current");
const foldAfter = Number(stepsList.dataset.foldAfter);
// The person's choice (true: open), kept across live updates and replays; null: not made.
let foldChoice = null;
let shownTodos = latest.todos;

function foldRow(fold) {
  const row = fromTemplate("step-fold-template");
  setText(row.querySelector(".fold-label"), fold.label);
  return row;
}

// Shows the fold as the person left it, on whatever list is there (rendered by the
// server or by renderSteps).
function applyFold() {
  const toggle = stepsList.querySelector(".fold-toggle");
  const folded = toggle !== null && foldedNow(foldChoice); // a short plan has nothing folded
  for (const item of stepsList.querySelectorAll(":scope > .step.status-completed, :scope > .step.status-cancelled")) {
    item.hidden = folded;
  }
  if (toggle) toggle.setAttribute("aria-expanded", String(!folded));
}

function showJump(todos) {
  const fold = foldPlan(todos, foldAfter);
  jumpButton.hidden = !(fold.long && fold.current !== null);
}

function renderSteps(todos, live) {
  shownTodos = todos;
  const fold = foldPlan(todos, foldAfter);
  // A re-render must not take the focus from a person on the toggle.
  const hadFocus = document.activeElement?.classList.contains("fold-toggle");
  const items = todos.length ? todos.map((step) => stepItem(step, live)) : [fromTemplate("no-steps-template")];
  if (fold.folds) items.unshift(foldRow(fold));
  stepsList.replaceChildren(...items);
  applyFold();
  showJump(todos);
  if (hadFocus && fold.folds) stepsList.querySelector(".fold-toggle").focus({ preventScroll: true });
}

stepsList.addEventListener("click", (event) => {
  if (!event.target.closest(".fold-toggle")) return;
  foldChoice = foldedNow(foldChoice); // folded → open, open → folded
  applyFold();
});

function jumpToCurrent() {
  const fold = foldPlan(shownTodos, foldAfter);
  const item = [...stepsList.querySelectorAll(":scope > .step")].find((node) => node.dataset.id === fold.current);
  if (!item) return;
  const smooth = !window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  item.tabIndex = -1;
  item.focus({ preventScroll: true });
  item.scrollIntoView({ block: "center", behavior: smooth ? "smooth" : "auto" });
}

jumpButton.addEventListener("click", jumpToCurrent);

function renderList(sectionId, listId, items, build) {
  $(sectionId).hidden = items.length === 0;
  $(listId).replaceChildren(...items.map(build));
}

function droppedItem(step) {
  const item = fromTemplate("dropped-step-template");
  setText(item.querySelector(".content"), step.content);
  setText(item.querySelector(".was"), `(was ${label(step.status)})`);
  return item;
}

// The data carries the newest dropped steps only; the whole list is asked for.
function showAllDropped() {
  fetch(config.droppedUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
    .then((response) => (response.ok ? response.json() : Promise.reject(new Error(`HTTP ${response.status}`))))
    .then((json) => {
      $("dropped").replaceChildren(...json.dropped.map(droppedItem));
      $("dropped-more").hidden = true;
    })
    .catch(() => setText($("dropped-more-text"), "The whole list could not be loaded; try again."));
}

function renderCounts(counts) {
  const pills = [];
  for (const [name, n] of Object.entries(counts)) {
    if (name === "total" || !n) continue;
    const pill = fromTemplate("count-pill-template");
    pill.classList.add(`status-${name}`);
    setText(pill, `${n} ${label(name)}`);
    pills.push(pill, " ");
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
  if (actions) actions.showState(info.state);
}

function renderBody(data, live = true) {
  shownRevision = data.revision;
  setText($("revision"), data.revision);
  setProgress($("bar"), data.counts.completed, data.counts.total);
  setText($("count"), `${data.counts.completed}/${data.counts.total}`);
  renderCounts(data.counts);
  renderSteps(data.todos, live);
  renderList("dropped-section", "dropped", data.dropped, droppedItem);
  const more = (data.dropped_count ?? data.dropped.length) > data.dropped.length;
  $("dropped-more").hidden = !more;
  if (more) setText($("dropped-more-text"), `The newest ${data.dropped.length} of ${data.dropped_count}.`);
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

// --- The timeline chart and its history (progress over time, status changes) ---

const chart = new TimelineChart($("chart"), {
  onPick(n) {
    timeline.value = String(n);
    replay(n);
  },
});
let historyRequest = null;

function loadHistory() {
  if (historyRequest) {
    historyRequest.again = true;
    return;
  }
  historyRequest = { again: false };
  fetch(config.historyUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
    .then((response) => (response.ok ? response.json() : Promise.reject(new Error(`HTTP ${response.status}`))))
    .then((json) => {
      chart.history.load(json);
      chart.update({});
    })
    .catch(() => {
      // The chart still shows the steps' own times; progress over time waits for the next try.
    })
    .finally(() => {
      const again = historyRequest.again || chart.history.last < latest.revision;
      historyRequest = null;
      if (again && chart.history.loaded) loadHistory();
    });
}

// --- Live ---

// The revision the person's last saved edit made: its message goes once the plan moves on.
let savedRevision = null;

function applySnapshot(event) {
  // Never go back: an older snapshot (a late event, a lagging replica) is dropped.
  if (event.revision < latest.revision) return;
  latest = event;
  if (savedRevision !== null && event.revision > savedRevision) {
    savedRevision = null;
    actions.clear();
  }
  renderHeader(event.session);
  if (!replaying) {
    renderBody(event);
    announce(event);
  }
  updateTimeline();
  steering.revisionArrived(event);
  // A missed revision (a reconnect, a dropped backlog) means the history has a gap.
  if (!chart.history.add(event) || !chart.history.loaded) loadHistory();
  chart.update({ data: event, cursor: replaying ? shownRevision : event.revision });
  if (editor) editor.newerArrived(event);
}

function applyState(event) {
  if (event.revision < latest.revision) return;
  latest = { ...latest, session: { ...latest.session, state: event.state, title: event.title } };
  setBadge($("state"), event.state);
  setText($("title"), event.title || latest.session.key);
  document.title = `${event.title || latest.session.key} · todoweb`;
  if (actions) actions.showState(event.state);
  chart.update({ data: latest });
}

function goLive() {
  replaying = false;
  panel.dataset.mode = "live";
  replayNote.hidden = true;
  liveButton.hidden = true;
  renderBody(latest);
  updateTimeline();
  chart.update({ cursor: latest.revision, replaying: false });
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
  chart.update({ cursor: n, replaying: true });
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
  const who = data.author === "user" ? ", edited by a person" : "";
  setText(replayNote, `Replaying revision ${n} of ${latest.revision}${when}${who}.`);
}

timeline.addEventListener("input", () => replay(Number(timeline.value)));
liveButton.addEventListener("click", () => {
  goLive();
  timeline.focus();
});
$("dropped-all").addEventListener("click", showAllDropped);

// --- Steering: people's messages to the agent, its questions to them ---

const steering = setupSteering({
  config,
  latestRevision: () => latest.revision,
  // "kept in revision N": the checklist replays it, as the slider would.
  onJump(n) {
    timeline.value = String(n);
    replay(n);
    $("steps-heading").scrollIntoView({ block: "start" });
  },
});

// --- What members do (no controls, and no URLs for them, on a share link) ---

const actions = config.actions ? setupSessionActions({ config, current: () => latest.session, onData: applySnapshot }) : null;

const editButton = $("edit-button");
const editor = config.actions
  ? new PlanEditor({
      config,
      onOpen() {
        panel.dataset.editing = "true";
        $("steps").hidden = true;
        editButton.hidden = true;
      },
      onSaved(data) {
        applySnapshot(data);
        editor.close();
        actions.say(`Plan saved as revision ${data.revision}. The agent sees your changes on its next call.`);
        savedRevision = data.revision;
      },
      onClose() {
        delete panel.dataset.editing;
        $("steps").hidden = false;
        editButton.hidden = false;
        editButton.focus();
      },
    })
  : null;
if (editor) {
  editButton.addEventListener("click", () => {
    if (replaying) goLive();
    editor.start(latest);
  });
}

// --- Clocks: running steps' durations, "updated … ago", and the chart's running bars ---

function tick() {
  const now = Date.now();
  for (const node of document.querySelectorAll(".duration[data-started]")) {
    setText(node, formatDuration((now - Date.parse(node.dataset.started)) / 1000));
  }
  const updated = $("updated");
  setText(updated, timeAgo(updated.getAttribute("datetime"), now));
  chart.tick(now);
  steering.tick(now);
}
chart.update({ data: latest, cursor: latest.revision });
showJump(latest.todos);
if (latest.revision) loadHistory();
setInterval(tick, 1000);
tick();

new LiveSocket(config.ws, {
  onMessage(message) {
    if (message.type === "session.snapshot") applySnapshot(message);
    else if (message.type === "session.state") applyState(message);
    else if (message.type === "session.messages") steering.messages(message.messages);
    else if (message.type === "session.questions") steering.questions(message.questions);
    else if (message.type === "share.ended") showConnection(panel, $("conn"), "ended");
    // The first message on every connection is the current snapshot. The lists of
    // messages and questions come only when they change: read them again on each
    // connection, for what changed since the page was made or while away.
    // The page says it is live once both lists are read too.
    if (panel.dataset.connection !== "live" && message.type === "session.snapshot") {
      steering.refresh().finally(() => showConnection(panel, $("conn"), "live"));
    }
  },
  onStatus(status) {
    showConnection(panel, $("conn"), status);
  },
});
