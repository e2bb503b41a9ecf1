// What the dashboard shows, without the DOM: which sessions match the filters, how far
// back the page knows them, their families and sections in order, the totals by state
// and the sparklines. dashboard.js keeps the state and draws; tests/js/ runs this
// under Node.

// A point in time, as the server wrote it (for queries) and in ms (to compare).
export const mark = (iso) => ({ iso, ms: Date.parse(iso) });
export const NOTHING_OLDER = { iso: null, ms: -Infinity };
export const NOT_KNOWN = { iso: null, ms: Infinity };
export const time = (s) => Date.parse(s.updated_at);

// Every session that matches the filters and was last active at or after this moment
// is known: `snapshot` is the socket's (null before it came), `pages` how far down the
// server's pages reach.
export function coverage(snapshot, pages) {
  const fromSnapshot = snapshot === null ? NOT_KNOWN : snapshot.complete ? NOTHING_OLDER : snapshot.floor;
  return fromSnapshot.ms <= pages.ms ? fromSnapshot : pages;
}

// What the socket's snapshot says: `complete` when it held every session (fewer than
// its limit), else the oldest moment it reaches.
export function snapshotOf(sessions, limit) {
  const complete = sessions.length < limit;
  const oldest = sessions.reduce((a, s) => (a === null || time(s) < time(a) ? s : a), null);
  return { complete, floor: complete || !oldest ? NOTHING_OLDER : mark(oldest.updated_at) };
}

// The newer of what the page holds (`known`) and `s`: true if `s` is to be kept.
export const isNewer = (known, s) => !known || known.revision <= s.revision;

// A session the server counted among the older ones (it was last active before the
// snapshot's floor) and now counts with the page's own.
export function leftTheOlder(snapshot, before, s) {
  if (snapshot === null || snapshot.complete) return false;
  const last = before ? time(before) : Date.parse(s.created_at);
  return last < snapshot.floor.ms;
}

export function matchesBase(s, filters) {
  if (filters.project && s.project !== filters.project) return false;
  if (filters.dialect && (s.dialect || "") !== filters.dialect) return false;
  const q = filters.q.toLowerCase();
  return !q || (s.title || "").toLowerCase().includes(q) || s.key.toLowerCase().includes(q);
}

export const matches = (s, filters) => matchesBase(s, filters) && (!filters.state || s.state === filters.state);

const newestFirst = (a, b) => b.newest - a.newest || (a.s.id < b.s.id ? -1 : 1);

// The families to show, newest activity first: a session shows when it matches and was
// last active at or after `floor` (ms); its parent shows with it. `summaries`: id -> summary.
export function families(summaries, filters, floor) {
  const childrenOf = new Map();
  const tops = [];
  for (const s of summaries.values()) {
    if (s.parent && summaries.has(s.parent)) {
      if (!childrenOf.has(s.parent)) childrenOf.set(s.parent, []);
      childrenOf.get(s.parent).push(s);
    } else {
      tops.push(s);
    }
  }
  function family(s) {
    const children = (childrenOf.get(s.id) || []).map(family).filter(Boolean).sort(newestFirst);
    if (!children.length && !(matches(s, filters) && time(s) >= floor)) return null;
    return { s, children, newest: Math.max(time(s), ...children.map((c) => c.newest)) };
  }
  return tops.map(family).filter(Boolean).sort(newestFirst);
}

// The families in sections by `group` ("project" or "dialect"; "" for none), in the
// order of their newest family.
export function sections(shown, group) {
  if (!group) return [{ name: "", families: shown }];
  const byName = new Map();
  for (const family of shown) {
    const name = family.s[group] || "no dialect";
    if (!byName.has(name)) byName.set(name, []);
    byName.get(name).push(family);
  }
  return [...byName].map(([name, members]) => ({ name, families: members }));
}

export const sessionsIn = (family) => 1 + family.children.reduce((n, child) => n + sessionsIn(child), 0);

// What needs a look in a section: '1 failed · 2 idle' (views.alerts says the same).
export function sectionAlerts(members) {
  const states = [];
  const collect = (family) => {
    states.push(family.s.state);
    family.children.forEach(collect);
  };
  members.forEach(collect);
  return ["failed", "idle"]
    .map((state) => [state, states.filter((s) => s === state).length])
    .filter(([, n]) => n)
    .map(([state, n]) => `${n} ${state}`)
    .join(" · ");
}

// Counts by state of the sessions matching the project, dialect and search filters;
// null while the server's part (`olderCounts`) is on its way. Before the snapshot,
// the server's own totals (`initial`).
export function countTotals({ summaries, filters, snapshot, olderCounts, states, initial }) {
  if (snapshot === null) return initial;
  if (!snapshot.complete && olderCounts === null) return null;
  const counts = Object.fromEntries(states.map((state) => [state, 0]));
  for (const s of summaries.values()) {
    // Sessions older than the snapshot are in the server's counts.
    if (matchesBase(s, filters) && (snapshot.complete || time(s) >= snapshot.floor.ms)) counts[s.state] += 1;
  }
  if (!snapshot.complete) for (const state of states) counts[state] += olderCounts[state] || 0;
  return counts;
}

export function filterQuery(filters, overrides = {}) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries({ ...filters, ...overrides })) if (value) params.set(name, value);
  return params;
}

const round1 = (value) => Math.round(value * 10) / 10;

// Progress over time as polyline points in a 100 × 20 box: x by time (by revision when
// they share a second), y by progress; no history: a flat line at the current progress.
// views.sparkline_points draws the same on the server.
export function sparkPoints(trend, progress) {
  let points = trend && trend.length ? trend : [[0, progress]];
  if (points.length === 1) points = [[0, points[0][1]], [1, points[0][1]]];
  const start = points[0][0];
  const span = points[points.length - 1][0] - start;
  const last = points.length - 1;
  return points
    .map(([moment, value], index) => {
      const x = span > 0 ? ((moment - start) / span) * 100 : (index / last) * 100;
      return `${round1(x)},${round1(19 - value * 18)}`;
    })
    .join(" ");
}

export function sparkLabel(trend, progress) {
  const first = Math.round((trend && trend.length ? trend[0][1] : progress) * 100);
  return `Progress over time: from ${first}% to ${Math.round(progress * 100)}%`;
}

// The last folder of the path the agent works in, as the server's cards show it.
export function lastFolder(path) {
  const parts = path.replace(/\\/g, "/").split("/").filter(Boolean);
  return parts.length ? parts[parts.length - 1] : "";
}
