// What the panel's timeline chart shows and where, without the DOM: the history of
// revisions, each step's row (when it waited, ran, ended), the chart's geometry and
// its axis. panel_timeline.js draws it; tests/js/ runs it under Node.
// Times are milliseconds since the epoch; `history` is /s/<id>/history.json, kept
// up to date from the live snapshots.

const MIN_SPAN = 30_000;
const TICK_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];

export const ms = (iso) => (iso ? Date.parse(iso) : null);
const label = (status) => status.replace("_", " ");

// Made once: a formatter costs far more to create than to use (a long plan asks hundreds of times).
const CLOCK = new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
const SHORT_CLOCK = new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit" });

export function clock(t, seconds = true) {
  return (seconds ? CLOCK : SHORT_CLOCK).format(t);
}

export function elapsed(seconds) {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return s % 60 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${s / 60}m`;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (h < 48) return m ? `${h}h ${String(m).padStart(2, "0")}m` : `${h}h`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

// Progress over time and every step's status changes, revision by revision.
export class History {
  constructor() {
    this.points = []; // {revision, at, completed, total, author}
    this.changes = []; // {revision, id, from, to}
    this.loaded = false;
  }

  load(json) {
    this.points = json.revisions.map(([revision, at, completed, total, author]) => ({
      revision,
      at: ms(at),
      completed,
      total,
      author,
    }));
    this.changes = json.changes.map(([revision, id, from, to]) => ({ revision, id, from, to }));
    this.loaded = true;
  }

  get last() {
    return this.points.length ? this.points[this.points.length - 1].revision : 0;
  }

  // A snapshot's revision; false when revisions are missing in between (fetch again).
  add(data) {
    if (!this.loaded || data.revision <= this.last) return true;
    if (data.revision !== this.last + 1) return false;
    const { completed, total } = data.counts;
    this.points.push({
      revision: data.revision,
      at: ms(data.session.updated_at),
      completed,
      total,
      author: data.author || "agent",
    });
    for (const change of data.changes) this.changes.push({ revision: data.revision, ...change });
    return true;
  }

  timeOf(revision) {
    const point = this.points.find((p) => p.revision === revision);
    return point ? point.at : null;
  }

  // The last revision written at or before `t` (the first one if none was).
  revisionAt(t) {
    let found = this.points[0];
    for (const point of this.points) {
      if (point.at <= t) found = point;
      else break;
    }
    return found ? found.revision : null;
  }

  stepEvents() {
    const times = new Map(this.points.map((p) => [p.revision, p.at]));
    const byStep = new Map();
    for (const change of this.changes) {
      const at = times.get(change.revision);
      if (at === undefined) continue;
      if (!byStep.has(change.id)) byStep.set(change.id, []);
      byStep.get(change.id).push({ at, from: change.from, to: change.to });
    }
    return byStep;
  }
}

// What each row shows, from the current data and (when loaded) the history.
export function buildRows(data, history, lastUpdate) {
  const events = history.stepEvents();
  const row = (step, dropped) => {
    const mine = events.get(step.id) || [];
    const started = ms(step.started_at);
    const entered = [...mine].reverse().find((e) => e.to === step.status);
    const reopens = mine.filter((e) => e.from === "completed" && e.to && e.to !== "completed").map((e) => e.at);
    // When its bar stops: never for a running step, nor for one still waiting to start.
    let end = null;
    if (dropped) end = ms(step.dropped_at);
    else if (step.status === "completed") end = ms(step.completed_at);
    else if (step.status !== "in_progress" && !(step.status === "pending" && started === null)) {
      end = entered ? entered.at : lastUpdate;
    }
    return {
      step,
      dropped,
      firstSeen: ms(step.first_seen_at),
      started,
      end,
      running: !dropped && step.status === "in_progress",
      reopened: step.reopened || 0,
      reopens,
    };
  };
  return [...data.todos.map((step) => row(step, false)), ...data.dropped.map((step) => row(step, true))];
}

// A row's tooltip: the step's text, then what happened to it.
export function describe(row) {
  const { step } = row;
  const parts = [row.dropped ? `dropped while ${label(step.status)}` : label(step.status)];
  if (row.started !== null) parts.push(`started ${clock(row.started)}`);
  if (row.dropped && row.end !== null) parts.push(`dropped ${clock(row.end)}`);
  else if (step.status === "completed" && row.end !== null) parts.push(`completed ${clock(row.end)}`);
  if (step.duration_s !== null && step.duration_s !== undefined) parts.push(`took ${elapsed(step.duration_s)}`);
  if (row.reopened) parts.push(`reopened ${row.reopened === 1 ? "once" : `${row.reopened} times`}`);
  return `${step.content}\n${parts.join(", ")}`;
}

// Steps run while the session is open: the chart's right edge is then "now".
export function isGrowing(data) {
  const state = data.session.state;
  return (state === "active" || state === "idle") && data.todos.some((s) => s.status === "in_progress");
}

// Sizes and the time scale: from the first write to the last event, or to a little
// after now while steps run (so that each second only stretches the running bars).
// `available` is the container's width in CSS pixels.
export function layout({ data, history, rows, now, available }) {
  let t0 = ms(data.session.created_at) ?? Infinity;
  let last = ms(data.session.updated_at);
  for (const t of [...history.points.map((p) => p.at), ...rows.flatMap((r) => [r.firstSeen, r.started, r.end])]) {
    if (t === null || Number.isNaN(t)) continue;
    t0 = Math.min(t0, t);
    last = Math.max(last, t);
  }
  const growing = isGrowing(data);
  let t1 = growing ? Math.max(now, last) + Math.max(10_000, (Math.max(now, last) - t0) * 0.15) : last;
  if (t1 - t0 < MIN_SPAN) t1 = t0 + MIN_SPAN;

  const width = Math.max(280, available);
  const narrow = width < 560; // labels above the bars
  const wide = width >= 1000; // a desktop or a wall screen: larger type, taller rows
  const labelWidth = narrow ? 0 : Math.round(Math.min(wide ? 400 : 320, Math.max(120, width * (wide ? 0.3 : 0.36))));
  const left = narrow ? 6 : labelWidth + 12;
  const right = width - 26;
  const axisHeight = 22;
  const bandTop = axisHeight + (narrow ? 16 : 4);
  const bandHeight = narrow ? 40 : wide ? 64 : 48;
  const rowsTop = bandTop + bandHeight + 14;
  const rowHeight = narrow ? 38 : wide ? 32 : 26;
  const barHeight = wide ? 14 : 12;
  const barOffset = narrow ? 20 : (rowHeight - barHeight) / 2;
  return {
    t0,
    t1,
    last,
    growing,
    end: growing ? Math.max(now, last) : last,
    now,
    width,
    narrow,
    wide,
    left,
    right,
    axisHeight,
    bandTop,
    bandHeight,
    rowsTop,
    barHeight,
    labelRoom: narrow ? right - left : labelWidth - 10,
    height: rowsTop + Math.max(1, rows.length) * rowHeight + 6,
    x: (t) => left + ((t - t0) / (t1 - t0)) * (right - left),
    rowTop: (index) => rowsTop + index * rowHeight,
    rowHeight,
    barY: (index) => rowsTop + index * rowHeight + barOffset,
    rowMid: (index) => rowsTop + index * rowHeight + barOffset + barHeight / 2,
  };
}

export function niceStep(spanSeconds, maxTicks) {
  return TICK_STEPS.find((step) => spanSeconds / step <= maxTicks) || TICK_STEPS[TICK_STEPS.length - 1];
}

// The axis' ticks, in seconds since the first write: a round step, about 78 px apart.
export function axisTicks(g) {
  const span = (g.t1 - g.t0) / 1000;
  const step = niceStep(span, Math.max(2, Math.floor((g.right - g.left) / 78)));
  const ticks = [];
  for (let s = 0; s <= span; s += step) ticks.push(s);
  return ticks;
}
