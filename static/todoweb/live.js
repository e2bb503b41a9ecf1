// Shared by the dashboard and the panel: safe DOM building (from the page's templates,
// or element by element), time formats, and a websocket that reconnects with
// exponential backoff.
// Agent text is untrusted: it only ever reaches the page as text nodes.

export function readConfig(id) {
  return JSON.parse(document.getElementById(id).textContent);
}

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "hidden") node.hidden = Boolean(value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// A copy of the markup Django rendered once, empty, in <template id="…"> (from the
// partial the page's own items come from): the page keeps one source of its markup.
export function fromTemplate(id) {
  return document.getElementById(id).content.firstElementChild.cloneNode(true);
}

export function setText(node, text) {
  const value = text === null || text === undefined ? "" : String(text);
  if (node && node.textContent !== value) node.textContent = value;
}

export function formatDuration(seconds) {
  if (seconds === null || seconds === undefined) return "";
  let s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  let m = Math.floor(s / 60);
  s %= 60;
  if (m < 60) return `${m}m ${String(s).padStart(2, "0")}s`;
  const h = Math.floor(m / 60);
  m %= 60;
  return `${h}h ${String(m).padStart(2, "0")}m`;
}

export function timeAgo(iso, now = Date.now()) {
  if (!iso) return "";
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 10) return "just now";
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export function setProgress(bar, completed, total) {
  const percent = total ? Math.round((completed / total) * 100) : 0;
  bar.setAttribute("aria-valuenow", String(percent));
  bar.setAttribute("aria-valuetext", `${completed} of ${total} steps completed`);
  bar.firstElementChild.className = `p${percent}`;
}

export function setBadge(badge, state) {
  badge.className = `badge state-${state}`;
  setText(badge, state);
}

const STATUS_TEXT = {
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Reconnecting…",
  changed: "Access changed: reloading…",
  signedout: "Logged out: log in to watch",
  forbidden: "No access",
  ended: "Link ended",
};

// Why the updates stopped, in a sentence (the indicator's tooltip, and read out).
const STATUS_WHY = {
  changed: "Your projects changed: the board reloads what you may see.",
  signedout: "You logged out, or your login ended: log in again to watch.",
  forbidden: "You may not watch this: you are not a member of its project, or your account was deactivated.",
  ended: "The share link was revoked, deleted or has expired.",
};

// The page's connection indicator and the flag browser tests wait on.
export function showConnection(root, indicator, status) {
  root.dataset.connection = status;
  setText(indicator, STATUS_TEXT[status] || status);
  indicator.className = `conn conn-${status}`;
  const why = STATUS_WHY[status];
  if (why) indicator.setAttribute("title", why);
  else indicator.removeAttribute("title");
  window.todowebReady = status === "live";
}

// Close codes the server uses to say "do not come back" (todoweb/access.py).
const FINAL = { 4401: "signedout", 4403: "forbidden", 4410: "ended" };
// "What you may see changed": come back at once for a fresh snapshot.
const RELOAD = 4409;

export class LiveSocket {
  constructor(path, { onMessage, onStatus }) {
    this.path = path;
    this.onMessage = onMessage;
    this.onStatus = onStatus;
    this.attempt = 0;
    this.timer = null;
    window.addEventListener("online", () => this.reconnectNow());
    this.open();
  }

  url() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${location.host}${this.path}`;
  }

  open() {
    this.timer = null;
    const ws = new WebSocket(this.url());
    this.ws = ws;
    ws.onopen = () => {
      this.attempt = 0;
    };
    ws.onmessage = (event) => {
      if (this.ws === ws) this.onMessage(JSON.parse(event.data));
    };
    ws.onclose = (event) => {
      if (this.ws !== ws) return;
      const final = FINAL[event.code];
      if (final) {
        this.onStatus(final);
        return;
      }
      if (event.code === RELOAD) {
        this.onStatus("changed");
        this.attempt = 0;
      } else {
        this.onStatus("reconnecting");
      }
      this.schedule();
    };
  }

  schedule() {
    // 0.5 s, 1 s, 2 s … up to 15 s, with jitter so a restarted server is not
    // hit by every browser at the same instant.
    const base = Math.min(15000, 500 * 2 ** this.attempt);
    this.attempt += 1;
    this.timer = setTimeout(() => this.open(), base * (0.75 + Math.random() * 0.5));
  }

  reconnectNow() {
    if (this.timer === null) return;
    clearTimeout(this.timer);
    this.open();
  }
}
