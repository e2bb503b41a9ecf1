// The dashboard: every visible session in a dense grid, newest activity first,
// subagents under their parent, totals by state at the top. Server-rendered first,
// then kept live from /ws/dashboard/.
//
// What the page knows about: the server's first page of matching sessions, then the
// socket's snapshot of the most recently active sessions (all of them when there are
// fewer than its limit), then every change. Older sessions come from the server a
// page at a time. The totals count every session: those the page holds, plus (when
// the snapshot is not all of them) the server's counts of the older ones.
import * as model from "./dashboard_model.js";
import {
  LiveSocket,
  el,
  fromTemplate,
  readConfig,
  setBadge,
  setProgress,
  setText,
  showConnection,
  timeAgo,
} from "./live.js";

const config = readConfig("dashboard-config");
const STATES = config.states;
const root = document.querySelector(".dashboard");
const list = document.getElementById("sessions");
const indicator = document.getElementById("conn");
const totalsNav = document.getElementById("totals");
const moreLink = document.getElementById("more");
const showing = document.getElementById("showing");
const emptyNote = document.getElementById("empty-note");
const notice = document.getElementById("notice");
const notifyAll = document.getElementById("notify-all");
const inputs = {
  q: document.getElementById("q"),
  project: document.getElementById("project"),
  dialect: document.getElementById("dialect"),
  group: document.getElementById("group"),
};
const announcer = el("p", { class: "sr-only", "aria-live": "polite" });
root.append(announcer);

const filters = {
  q: inputs.q.value.trim(),
  project: inputs.project.value,
  dialect: inputs.dialect.value,
  state: new URLSearchParams(location.search).get("state") || "",
  group: inputs.group.value,
};
if (!STATES.includes(filters.state)) filters.state = "";

// Opt-in notifications: the sessions watched (or all of them), kept in this browser.
const notificationsSupported = "Notification" in window;
const watched = new Set(JSON.parse(localStorage.getItem("todoweb.watched") || "[]"));
let watchingAll = localStorage.getItem("todoweb.watchAll") === "1";

// --- what the page knows --------------------------------------------------------

const summaries = new Map(); // id -> summary
for (const s of config.sessions) summaries.set(s.id, s);
// The socket's snapshot: `complete` when it held every session, else the oldest it held.
let snapshot = null;
// How far down the server's pages for the current filters reach.
let pages = config.next ? model.mark(config.next) : model.NOTHING_OLDER;
// The server's counts by state of the sessions older than the snapshot's oldest.
let olderCounts = null;
let limit = config.page;
// Bumped when the filters change: answers asked for under older filters are dropped.
const generations = { list: 0, counts: 0 };
let fetchingPage = false;
let pageTimer = null;

// Every session that matches the filters and was last active at or after this moment is known.
const coverage = () => model.coverage(snapshot, pages);

// --- cards ----------------------------------------------------------------------

const cards = new Map(); // id -> <li>, kept while the session is known
const arrived = new Set(); // sessions new since the page loaded: their cards light up once
const filled = new WeakMap(); // <li> -> the summary it shows
const heads = new Map(); // group name -> <li class="group-head">
for (const card of list.querySelectorAll(".card")) {
  cards.set(card.dataset.id, card);
  filled.set(card, summaries.get(card.dataset.id));
}
for (const head of list.querySelectorAll(".group-head")) heads.set(head.dataset.group, head);

function fillCard(card, s) {
  const name = s.title || s.key;
  Object.assign(card.dataset, {
    id: s.id,
    project: s.project,
    dialect: s.dialect || "",
    state: s.state,
    key: s.key,
    updated: s.updated_at,
  });
  const link = card.querySelector(".card-title");
  link.setAttribute("href", s.url);
  setText(link, name);
  setBadge(card.querySelector(".badge"), s.state);
  const watch = card.querySelector(".watch");
  watch.setAttribute("aria-label", `Notify me about ${name}`);
  watch.setAttribute("aria-pressed", String(watched.has(s.id)));
  watch.hidden = !notificationsSupported;
  setText(card.querySelector(".project"), s.project);
  setText(card.querySelector(".dialect"), s.dialect || "—");
  card.querySelector(".key-part").hidden = !s.title;
  setText(card.querySelector(".key"), s.key);
  const folder = card.querySelector(".folder");
  setText(folder, model.lastFolder(s.workdir || ""));
  folder.setAttribute("title", s.workdir || "");
  setText(card.querySelector(".branch"), s.branch || "");
  card.querySelector(".branch-part").hidden = !s.branch;
  card.querySelector(".place").hidden = !s.workdir && !s.branch;
  const clock = card.querySelector("time");
  clock.setAttribute("datetime", s.updated_at);
  setText(clock, timeAgo(s.updated_at));
  setProgress(card.querySelector(".bar"), s.completed, s.total);
  setText(card.querySelector(".count"), `${s.completed}/${s.total}`);
  // The page's own summaries carry no trend: the server drew their lines.
  if (s.trend !== undefined) {
    const spark = card.querySelector(".spark");
    spark.setAttribute("aria-label", model.sparkLabel(s.trend, s.progress));
    spark.firstElementChild.setAttribute("points", model.sparkPoints(s.trend, s.progress));
  }
  const current = card.querySelector(".current");
  current.hidden = !s.current || s.state === "completed" || s.state === "closed";
  setText(card.querySelector(".current-text"), s.current);
  filled.set(card, s);
}

function cardFor(family) {
  let card = cards.get(family.s.id);
  if (!card) {
    card = fromTemplate("card-template");
    cards.set(family.s.id, card);
    if (arrived.delete(family.s.id)) card.classList.add("fresh");
  }
  if (filled.get(card) !== family.s) fillCard(card, family.s);
  place(card.querySelector(":scope > .children"), family.children.map(cardFor));
  return card;
}

function groupHead(section) {
  let head = heads.get(section.name);
  if (!head) {
    head = fromTemplate("group-head-template");
    head.dataset.group = section.name;
    setText(head.querySelector(".group-name"), section.name);
    heads.set(section.name, head);
  }
  setText(head.querySelector(".group-count"), section.families.length);
  setText(head.querySelector(".group-alerts"), model.sectionAlerts(section.families));
  return head;
}

// Puts exactly `nodes`, in this order, in `container`: moves only what moved.
function place(container, nodes) {
  nodes.forEach((node, index) => {
    if (container.children[index] !== node) container.insertBefore(node, container.children[index] || null);
  });
  while (container.children.length > nodes.length) container.lastElementChild.remove();
}

// --- what is shown ----------------------------------------------------------------

// The families to show: those within what the page knows.
const families = () => model.families(summaries, filters, coverage().ms);

let renderScheduled = false;
function scheduleRender() {
  if (renderScheduled) return;
  renderScheduled = true;
  requestAnimationFrame(render);
}

function render() {
  renderScheduled = false;
  const shown = families();
  const nodes = [];
  let count = 0;
  let sessionsShown = 0;
  for (const section of model.sections(shown, filters.group)) {
    if (count >= limit) break;
    const members = section.families.slice(0, limit - count);
    if (section.name) nodes.push(groupHead(section));
    for (const family of members) {
      nodes.push(cardFor(family));
      sessionsShown += model.sessionsIn(family);
    }
    count += members.length;
  }
  place(list, nodes);
  const olderOnServer = coverage().ms > -Infinity;
  emptyNote.hidden = shown.length > 0 || olderOnServer;
  const counts = countTotals();
  const anySession = counts ? Object.values(counts).some(Boolean) : true;
  emptyNote.querySelector(".no-match").hidden = !anySession;
  emptyNote.querySelector(".none-yet").hidden = anySession;
  const more = shown.length > limit || olderOnServer;
  moreLink.hidden = !more;
  const matching = counts && (filters.state ? counts[filters.state] : Object.values(counts).reduce((a, b) => a + b, 0));
  setText(showing, more && counts ? `Showing ${sessionsShown} of ${matching}, most recently active first` : "");
  if (shown.length < limit && olderOnServer) fetchPageSoon();
}

// --- totals and the tab title -----------------------------------------------------

const countTotals = () =>
  model.countTotals({ summaries, filters, snapshot, olderCounts, states: STATES, initial: config.totals });

const filterQuery = (overrides = {}) => model.filterQuery(filters, overrides);

function showTotals() {
  const counts = countTotals();
  totalsNav.setAttribute("aria-busy", String(counts === null));
  for (const link of totalsNav.querySelectorAll(".total")) {
    const state = link.dataset.state;
    if (state === filters.state) link.setAttribute("aria-current", "true");
    else link.removeAttribute("aria-current");
    link.setAttribute("href", `?${filterQuery({ state: state === filters.state ? "" : state })}`);
    if (counts) {
      const n = state ? counts[state] : Object.values(counts).reduce((a, b) => a + b, 0);
      setText(link.querySelector(".n"), n);
      link.classList.toggle("zero", n === 0);
    }
  }
  if (counts) {
    const urgent = ["failed", "idle", "active"].filter((state) => counts[state]);
    document.title = [...urgent.map((state) => `${counts[state]} ${state}`), "Sessions · todoweb"].join(" · ");
  }
}

// The totals and the title change at once, even in a background tab (the grid waits
// for the next frame, which a hidden tab does not draw).
function changed() {
  showTotals();
  scheduleRender();
}

// --- asking the server --------------------------------------------------------------

async function ask(params) {
  const response = await fetch(`${location.pathname}?${params}`, { headers: { Accept: "application/json" } });
  if (!response.ok || !(response.headers.get("Content-Type") || "").startsWith("application/json")) {
    throw new Error(`dashboard: ${response.status}`);
  }
  return response.json();
}

// The next page of matching sessions older than what the page knows (soon: typing
// in the search box changes the filters at every key).
function fetchPageSoon() {
  if (pageTimer === null) pageTimer = setTimeout(fetchPage, 100);
}

async function fetchPage() {
  pageTimer = null;
  if (fetchingPage) return;
  fetchingPage = true;
  const asked = generations.list;
  const params = filterQuery({ group: "" });
  params.set("before", coverage().iso || "");
  try {
    const answer = await ask(params);
    if (asked === generations.list) {
      for (const s of answer.sessions) remember(s);
      pages = answer.next ? model.mark(answer.next) : model.NOTHING_OLDER;
    }
  } catch (error) {
    console.warn(error);
    return; // until the next change: no retrying in a loop
  } finally {
    fetchingPage = false;
  }
  changed(); // shows the page, or asks for it again under the new filters
}

let countsTimer = null;
// Asks again for the counts of the older sessions (soon: several reasons come at once).
function refreshCounts(delay = 300) {
  if (snapshot === null || snapshot.complete) return;
  clearTimeout(countsTimer);
  countsTimer = setTimeout(async () => {
    const asked = generations.counts;
    const floor = snapshot.floor;
    const params = filterQuery({ state: "", group: "" });
    params.set("count_before", floor.iso);
    try {
      const answer = await ask(params);
      if (asked === generations.counts && snapshot.floor === floor) {
        olderCounts = answer.counts;
        changed();
      }
    } catch (error) {
      console.warn(error);
    }
  }, delay);
}
// Older sessions turn idle on the clock, without an event.
setInterval(() => refreshCounts(0), 60000);

// --- live ---------------------------------------------------------------------------

// Keeps the newer of what the page holds and `s`; true if `s` was kept.
function remember(s) {
  if (!model.isNewer(summaries.get(s.id), s)) return false;
  summaries.set(s.id, s);
  return true;
}

const leftTheOlder = (before, s) => model.leftTheOlder(snapshot, before, s);

function applySummary(s) {
  const before = summaries.get(s.id);
  if (!remember(s)) return;
  if (!before) {
    arrived.add(s.id);
    setText(announcer, `New session: ${s.title || s.key}`);
  }
  if (leftTheOlder(before, s)) refreshCounts();
  notifyChange(before, s);
}

function forget(id) {
  const known = summaries.get(id);
  if (!known) return;
  if (leftTheOlder(known, known)) refreshCounts();
  summaries.delete(id);
  cards.get(id)?.remove();
  cards.delete(id);
}

function applySnapshot(message) {
  const ids = new Set(message.sessions.map((s) => s.id));
  snapshot = model.snapshotOf(message.sessions, config.snapshotLimit);
  for (const s of message.sessions) {
    const before = summaries.get(s.id);
    if (remember(s)) notifyChange(before, s);
  }
  // Sessions archived while the socket was away.
  for (const [id, s] of [...summaries]) {
    if (!ids.has(id) && model.time(s) >= snapshot.floor.ms) forget(id);
  }
  olderCounts = null;
  refreshCounts(0);
  changed();
}

// --- filters --------------------------------------------------------------------------

function setFilters(next) {
  const baseChanged = ["q", "project", "dialect"].some((name) => name in next && next[name] !== filters[name]);
  const listChanged = baseChanged || ("state" in next && next.state !== filters.state);
  Object.assign(filters, next);
  const query = filterQuery().toString();
  history.replaceState(null, "", query ? `?${query}` : location.pathname);
  if (listChanged) {
    generations.list += 1;
    limit = config.page;
    pages = model.NOT_KNOWN;
  }
  if (baseChanged) {
    generations.counts += 1;
    olderCounts = null;
    refreshCounts(150);
  }
  changed();
}

function readInputs() {
  setFilters({
    q: inputs.q.value.trim(),
    project: inputs.project.value,
    dialect: inputs.dialect.value,
    group: inputs.group.value,
  });
}
for (const input of Object.values(inputs)) input.addEventListener("input", readInputs);
document.querySelector(".filters").addEventListener("submit", (event) => {
  event.preventDefault();
  readInputs();
});

totalsNav.addEventListener("click", (event) => {
  const link = event.target.closest(".total");
  if (!link) return;
  event.preventDefault();
  setFilters({ state: link.dataset.state === filters.state ? "" : link.dataset.state });
});

moreLink.addEventListener("click", (event) => {
  event.preventDefault();
  limit += config.page;
  scheduleRender();
});

// --- notifications ----------------------------------------------------------------------

const NOTIFY = { completed: "Completed", failed: "Failed", idle: "Idle" };

async function notificationsAllowed() {
  if (Notification.permission === "default") await Notification.requestPermission();
  const allowed = Notification.permission === "granted";
  notice.hidden = allowed;
  setText(notice, allowed ? "" : "Notifications are blocked for this site: allow them in the browser's site settings.");
  return allowed;
}

function saveWatches() {
  localStorage.setItem("todoweb.watched", JSON.stringify([...watched]));
  localStorage.setItem("todoweb.watchAll", watchingAll ? "1" : "0");
}

function notifyChange(before, s) {
  if (!before || before.state === s.state || !NOTIFY[s.state]) return;
  if (!watchingAll && !watched.has(s.id)) return;
  const name = s.title || s.key;
  setText(announcer, `${NOTIFY[s.state]}: ${name}`);
  if (!notificationsSupported || Notification.permission !== "granted") return;
  const shown = new Notification(`${NOTIFY[s.state]}: ${name}`, {
    body: `${s.completed}/${s.total} steps · ${s.project}`,
    tag: `todoweb-${s.id}`,
  });
  shown.onclick = () => {
    window.focus();
    cards.get(s.id)?.scrollIntoView({ block: "center" });
    shown.close();
  };
}

if (notificationsSupported) {
  notifyAll.hidden = false;
  notifyAll.setAttribute("aria-pressed", String(watchingAll));
  for (const button of list.querySelectorAll(".watch")) {
    button.hidden = false;
    button.setAttribute("aria-pressed", String(watched.has(button.closest(".card").dataset.id)));
  }
}

notifyAll.addEventListener("click", async () => {
  if (!watchingAll && !(await notificationsAllowed())) return;
  watchingAll = !watchingAll;
  notifyAll.setAttribute("aria-pressed", String(watchingAll));
  saveWatches();
});

list.addEventListener("click", async (event) => {
  const button = event.target.closest(".watch");
  if (!button) return;
  const id = button.closest(".card").dataset.id;
  if (!watched.has(id) && !(await notificationsAllowed())) return;
  if (watched.has(id)) watched.delete(id);
  else watched.add(id);
  button.setAttribute("aria-pressed", String(watched.has(id)));
  saveWatches();
});

// --- start ----------------------------------------------------------------------------------

function refreshTimes() {
  const now = Date.now();
  for (const clock of list.querySelectorAll("time")) setText(clock, timeAgo(clock.getAttribute("datetime"), now));
}
refreshTimes();
setInterval(refreshTimes, 10000);
history.replaceState(null, "", filterQuery().toString() ? `?${filterQuery()}` : location.pathname);

new LiveSocket(config.ws, {
  onMessage(message) {
    if (message.type === "dashboard.snapshot") {
      applySnapshot(message);
      showConnection(root, indicator, "live");
    } else if (message.type === "session.summary") {
      applySummary(message.session);
      changed();
    } else if (message.type === "session.archived") {
      forget(message.session);
      changed();
    }
  },
  onStatus(status) {
    showConnection(root, indicator, status);
  },
});
