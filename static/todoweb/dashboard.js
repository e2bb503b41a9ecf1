// The dashboard: every visible session, newest activity first, subagents under
// their parent; server-rendered first, then kept live from /ws/dashboard/.
import { LiveSocket, el, readConfig, setBadge, setProgress, setText, showConnection, timeAgo } from "./live.js";

const config = readConfig("dashboard-config");
const root = document.querySelector(".dashboard");
const list = document.getElementById("sessions");
const indicator = document.getElementById("conn");
const filters = { q: document.getElementById("q"), project: document.getElementById("project"), state: document.getElementById("state") };
const announcer = el("p", { class: "sr-only", "aria-live": "polite" });
root.append(announcer);

const sessions = new Map(); // id -> summary
const cards = new Map(); // id -> <li>
for (const card of list.querySelectorAll(".card")) cards.set(card.dataset.id, card);

function newCard(s) {
  return el(
    "li",
    { class: "card", "data-id": s.id },
    el(
      "div",
      { class: "card-head" },
      el("a", { class: "card-title", href: s.url }),
      el("span", { class: "badge" }),
    ),
    el(
      "p",
      { class: "meta" },
      el("span", { class: "project" }),
      " · ",
      el("span", { class: "dialect" }),
      " · ",
      el("span", { class: "key" }),
      " · ",
      el("time"),
    ),
    el(
      "div",
      { class: "progress-row" },
      el(
        "div",
        { class: "bar", role: "progressbar", "aria-label": "Progress", "aria-valuemin": "0", "aria-valuemax": "100" },
        el("span"),
      ),
      el("span", { class: "count" }),
    ),
    el(
      "p",
      { class: "current" },
      el("span", { class: "spinner", "aria-hidden": "true" }),
      el("span", { class: "current-text" }),
    ),
    el("ul", { class: "children", "aria-label": "Subagents" }),
  );
}

function fillCard(card, s) {
  Object.assign(card.dataset, { project: s.project, state: s.state, title: s.title || "", key: s.key, updated: s.updated_at });
  const link = card.querySelector(".card-title");
  link.setAttribute("href", s.url);
  setText(link, s.title || s.key);
  setBadge(card.querySelector(".badge"), s.state);
  setText(card.querySelector(".project"), s.project);
  setText(card.querySelector(".dialect"), s.dialect || "—");
  setText(card.querySelector(".key"), s.key);
  const time = card.querySelector("time");
  time.setAttribute("datetime", s.updated_at);
  setText(time, timeAgo(s.updated_at));
  setProgress(card.querySelector(".bar"), s.completed, s.total);
  setText(card.querySelector(".count"), `${s.completed}/${s.total}`);
  const current = card.querySelector(".current");
  current.hidden = !s.current || s.state === "completed" || s.state === "closed";
  setText(card.querySelector(".current-text"), s.current);
}

function containerFor(s) {
  const parent = s.parent && cards.get(s.parent);
  return parent ? parent.querySelector(":scope > .children") : list;
}

function upsert(s) {
  const isNew = !cards.has(s.id);
  let card = cards.get(s.id);
  if (!card) {
    card = newCard(s);
    cards.set(s.id, card);
    card.classList.add("fresh");
  }
  sessions.set(s.id, s);
  fillCard(card, s);
  const container = containerFor(s);
  if (card.parentElement !== container) container.append(card);
  // Subagents that arrived before their parent move under it.
  for (const other of sessions.values()) {
    if (other.parent === s.id) {
      const child = cards.get(other.id);
      const children = card.querySelector(":scope > .children");
      if (child && child.parentElement !== children) children.append(child);
    }
  }
  return isNew;
}

function familyUpdated(card) {
  let newest = card.dataset.updated || "";
  for (const child of card.querySelectorAll(":scope > .children > .card")) {
    const t = familyUpdated(child);
    if (t > newest) newest = t;
  }
  return newest;
}

function order(container) {
  const items = [...container.children].filter((node) => node.classList.contains("card"));
  const keyed = items.map((card) => [familyUpdated(card), card]);
  keyed.sort((a, b) => (a[0] < b[0] ? 1 : a[0] > b[0] ? -1 : 0));
  keyed.forEach(([, card], index) => {
    if (container.children[index] !== card) container.insertBefore(card, container.children[index] || null);
    order(card.querySelector(":scope > .children"));
  });
}

function matches(card) {
  const q = filters.q.value.trim().toLowerCase();
  const { project, state, title, key } = card.dataset;
  if (filters.project.value && project !== filters.project.value) return false;
  if (filters.state.value && state !== filters.state.value) return false;
  return !q || (title || "").toLowerCase().includes(q) || (key || "").toLowerCase().includes(q);
}

// A card shows when it matches, or when one of its subagents does.
function applyFilters(container = list) {
  let any = false;
  for (const card of container.querySelectorAll(":scope > .card")) {
    const childShown = applyFilters(card.querySelector(":scope > .children"));
    card.hidden = !(matches(card) || childShown);
    any = any || !card.hidden;
  }
  return any;
}

function refresh() {
  order(list);
  applyFilters();
  document.getElementById("empty-note").hidden = cards.size > 0;
}

function onFilter() {
  const params = new URLSearchParams();
  for (const [name, input] of Object.entries(filters)) if (input.value) params.set(name, input.value);
  const query = params.toString();
  history.replaceState(null, "", query ? `?${query}` : location.pathname);
  applyFilters();
}
for (const input of Object.values(filters)) input.addEventListener("input", onFilter);
document.querySelector(".filters").addEventListener("submit", (event) => {
  event.preventDefault();
  onFilter();
});

function removeCard(id) {
  const card = cards.get(id);
  if (!card) return;
  // Its subagents, if still visible, go back to the top level first.
  for (const child of card.querySelectorAll(":scope > .children > .card")) list.append(child);
  card.remove();
  cards.delete(id);
  sessions.delete(id);
}

function applySnapshot(message) {
  const ids = new Set(message.sessions.map((s) => s.id));
  for (const s of message.sessions) upsert(s);
  for (const id of [...cards.keys()]) {
    if (!ids.has(id)) removeCard(id);
  }
  refresh();
}

function applySummary(s) {
  const known = sessions.get(s.id);
  if (known && known.revision > s.revision) return;
  if (upsert(s)) setText(announcer, `New session: ${s.title || s.key}`);
  refresh();
}

setInterval(() => {
  const now = Date.now();
  for (const time of list.querySelectorAll("time")) setText(time, timeAgo(time.getAttribute("datetime"), now));
}, 10000);

new LiveSocket(config.ws, {
  onMessage(message) {
    if (message.type === "dashboard.snapshot") {
      applySnapshot(message);
      showConnection(root, indicator, "live");
    } else if (message.type === "session.summary") {
      applySummary(message.session);
    } else if (message.type === "session.archived") {
      removeCard(message.session);
      refresh();
    }
  },
  onStatus(status) {
    showConnection(root, indicator, status);
  },
});
