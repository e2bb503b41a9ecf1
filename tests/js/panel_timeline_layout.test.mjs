// The timeline chart's data and geometry (static/todoweb/panel_timeline_layout.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  History,
  axisTicks,
  buildRows,
  describe,
  elapsed,
  isGrowing,
  layout,
  niceStep,
} from "../../static/todoweb/panel_timeline_layout.js";

const T0 = Date.parse("2025-03-01T10:00:00Z");
const at = (seconds) => new Date(T0 + seconds * 1000).toISOString();

function session(state, createdAfter, updatedAfter) {
  return { state, created_at: at(createdAfter), updated_at: at(updatedAfter) };
}

function loadedHistory() {
  const history = new History();
  history.load({
    revisions: [
      [1, at(0), 0, 2, "agent"],
      [2, at(60), 1, 2, "user"],
    ],
    changes: [
      [1, "a", null, "in_progress"],
      [2, "a", "in_progress", "completed"],
      [7, "a", "completed", "failed"], // a revision the history does not hold
    ],
  });
  return history;
}

test("elapsed shortens to the two largest units", () => {
  assert.equal(elapsed(0), "0s");
  assert.equal(elapsed(59.6), "1m");
  assert.equal(elapsed(61), "1m 1s");
  assert.equal(elapsed(120), "2m");
  assert.equal(elapsed(3600), "1h");
  assert.equal(elapsed(3660), "1h 01m");
  assert.equal(elapsed(47 * 3600 + 59 * 60), "47h 59m");
  assert.equal(elapsed(48 * 3600), "2d 0h");
  assert.equal(elapsed(49.5 * 3600), "2d 1h");
});

test("the history answers a revision's time and the revision written at a time", () => {
  const history = loadedHistory();
  assert.equal(history.last, 2);
  assert.equal(history.timeOf(2), T0 + 60_000);
  assert.equal(history.timeOf(9), null);
  assert.equal(history.revisionAt(T0 - 5_000), 1); // before the first: the first
  assert.equal(history.revisionAt(T0 + 30_000), 1);
  assert.equal(history.revisionAt(T0 + 60_000), 2);
  assert.equal(history.revisionAt(T0 + 999_000), 2);
  assert.equal(new History().revisionAt(T0), null);
});

test("the history takes the next revision, and says when one is missing", () => {
  const history = loadedHistory();
  const snapshot = (revision) => ({
    revision,
    session: { updated_at: at(90) },
    counts: { completed: 2, total: 2 },
    changes: [{ id: "b", from: "pending", to: "completed" }],
  });
  assert.equal(history.add(snapshot(2)), true); // already held
  assert.equal(history.points.length, 2);
  assert.equal(history.add(snapshot(4)), false); // 3 is missing
  assert.equal(history.add(snapshot(3)), true);
  assert.deepEqual(history.points[2], { revision: 3, at: T0 + 90_000, completed: 2, total: 2, author: "agent" });
  assert.deepEqual(history.changes.at(-1), { revision: 3, id: "b", from: "pending", to: "completed" });
  // Not loaded yet: nothing is added, and nothing is reported missing.
  const empty = new History();
  assert.equal(empty.add(snapshot(5)), true);
  assert.equal(empty.points.length, 0);
});

test("a step's events carry the time of their revision; unknown revisions are left out", () => {
  const events = loadedHistory().stepEvents();
  assert.deepEqual(events.get("a"), [
    { at: T0, from: null, to: "in_progress" },
    { at: T0 + 60_000, from: "in_progress", to: "completed" },
  ]);
});

test("each row says when its bar ends: at completion, when it entered its status, or never", () => {
  const history = new History();
  history.load({
    revisions: [
      [1, at(0), 0, 5, "agent"],
      [2, at(40), 0, 5, "agent"],
      [3, at(50), 1, 5, "agent"],
      [4, at(70), 1, 5, "agent"],
    ],
    changes: [
      [2, "failed", "in_progress", "failed"],
      [3, "done", "in_progress", "completed"],
      [4, "done", "completed", "in_progress"],
    ],
  });
  const data = {
    todos: [
      { id: "done", content: "Done", status: "completed", started_at: at(10), completed_at: at(45), first_seen_at: at(0), reopened: 1 },
      { id: "failed", content: "Failed", status: "failed", started_at: at(20), first_seen_at: at(0) },
      { id: "blocked", content: "Blocked", status: "blocked", first_seen_at: at(0) },
      { id: "running", content: "Running", status: "in_progress", started_at: at(30), first_seen_at: at(0) },
      { id: "waiting", content: "Waiting", status: "pending", first_seen_at: at(5) },
      { id: "paused", content: "Paused", status: "pending", started_at: at(25), first_seen_at: at(0) },
    ],
    dropped: [{ id: "gone", content: "Gone", status: "in_progress", started_at: at(15), dropped_at: at(35) }],
  };
  const lastUpdate = T0 + 80_000;
  const rows = buildRows(data, history, lastUpdate);
  const byId = Object.fromEntries(rows.map((row) => [row.step.id, row]));
  assert.deepEqual(
    rows.map((row) => row.step.id),
    ["done", "failed", "blocked", "running", "waiting", "paused", "gone"],
  );
  assert.equal(byId.done.end, T0 + 45_000);
  assert.deepEqual(byId.done.reopens, [T0 + 70_000]);
  assert.equal(byId.done.reopened, 1);
  assert.equal(byId.failed.end, T0 + 40_000); // revision 2 made it fail
  assert.equal(byId.blocked.end, lastUpdate); // no history of it: the last update
  assert.equal(byId.running.end, null);
  assert.equal(byId.running.running, true);
  assert.equal(byId.waiting.end, null);
  assert.equal(byId.waiting.firstSeen, T0 + 5_000);
  assert.equal(byId.paused.end, lastUpdate); // started once, pending again
  assert.equal(byId.gone.end, T0 + 35_000);
  assert.equal(byId.gone.dropped, true);
  assert.equal(byId.gone.running, false);
  assert.equal(byId.gone.started, T0 + 15_000);
});

test("a row's tooltip is the step's text, then its status and what it took", () => {
  const row = (step, extra = {}) => ({ step, dropped: false, started: null, end: null, reopened: 0, ...extra });
  assert.equal(describe(row({ content: "Write tests", status: "pending" })), "Write tests\npending");
  assert.equal(
    describe(row({ content: "Fix", status: "in_progress", duration_s: 75 }, { reopened: 2 })),
    "Fix\nin progress, took 1m 15s, reopened 2 times",
  );
  assert.equal(
    describe(row({ content: "Old", status: "in_progress" }, { dropped: true, reopened: 1 })),
    "Old\ndropped while in progress, reopened once",
  );
});

test("the chart grows to the right only while a step runs in an open session", () => {
  const running = [{ status: "in_progress" }];
  assert.equal(isGrowing({ session: { state: "active" }, todos: running }), true);
  assert.equal(isGrowing({ session: { state: "idle" }, todos: running }), true);
  assert.equal(isGrowing({ session: { state: "closed" }, todos: running }), false);
  assert.equal(isGrowing({ session: { state: "active" }, todos: [{ status: "completed" }] }), false);
});

test("a finished session's chart spans its first write to its last, on a desktop", () => {
  const data = { session: session("completed", 0, 60), todos: [], dropped: [] };
  const g = layout({ data, history: new History(), rows: [], now: T0 + 600_000, available: 800 });
  assert.equal(g.t0, T0);
  assert.equal(g.t1, T0 + 60_000);
  assert.equal(g.end, T0 + 60_000);
  assert.equal(g.growing, false);
  assert.equal(g.narrow, false);
  assert.equal(g.wide, false);
  // Labels take 36 % of 800 px (288), the bars the rest but 26 px.
  assert.equal(g.left, 300);
  assert.equal(g.right, 774);
  assert.equal(g.labelRoom, 278);
  assert.equal(g.x(T0), 300);
  assert.equal(g.x(T0 + 30_000), 537);
  assert.equal(g.x(T0 + 60_000), 774);
  assert.equal(g.bandTop, 26);
  assert.equal(g.rowsTop, 88);
  assert.equal(g.rowTop(2), 140);
  assert.equal(g.barY(2), 147);
  assert.equal(g.rowMid(2), 153);
  assert.equal(g.height, 120); // room for one row even without steps
});

test("on a phone the labels go above the bars and the rows are taller", () => {
  const data = { session: session("completed", 0, 60), todos: [], dropped: [] };
  const rows = [{}, {}, {}].map(() => ({ firstSeen: null, started: null, end: null }));
  const g = layout({ data, history: new History(), rows, now: T0, available: 200 });
  assert.equal(g.width, 280); // never narrower
  assert.equal(g.narrow, true);
  assert.equal(g.left, 6);
  assert.equal(g.right, 254);
  assert.equal(g.labelRoom, 248);
  assert.equal(g.bandTop, 38);
  assert.equal(g.rowsTop, 92);
  assert.equal(g.rowMid(0), 118);
  assert.equal(g.height, 212);
});

test("on a wide screen the labels column stops at 400 px and the rows are 32 px", () => {
  const data = { session: session("completed", 0, 60), todos: [], dropped: [] };
  const g = layout({ data, history: new History(), rows: [], now: T0, available: 1400 });
  assert.equal(g.wide, true);
  assert.equal(g.left, 412);
  assert.equal(g.rowsTop, 104);
  assert.equal(g.barY(1), 104 + 32 + 9);
});

test("while a step runs the chart reaches past now by 15 % of its span, at least 10 s", () => {
  const data = { session: session("active", 0, 20), todos: [{ status: "in_progress" }], dropped: [] };
  const g = layout({ data, history: new History(), rows: [], now: T0 + 100_000, available: 800 });
  assert.equal(g.growing, true);
  assert.equal(g.end, T0 + 100_000);
  assert.equal(g.t1, T0 + 115_000);
  const early = layout({ data, history: new History(), rows: [], now: T0 + 40_000, available: 800 });
  assert.equal(early.t1, T0 + 50_000);
});

test("the span is at least 30 s, and starts at the history's or a step's earliest time", () => {
  const short = { session: session("completed", 0, 5), todos: [], dropped: [] };
  assert.equal(layout({ data: short, history: new History(), rows: [], now: T0, available: 800 }).t1, T0 + 30_000);
  const history = new History();
  history.load({ revisions: [[1, at(-10), 0, 1, "agent"]], changes: [] });
  const rows = [{ firstSeen: T0 - 20_000, started: NaN, end: T0 + 90_000 }];
  const g = layout({ data: short, history, rows, now: T0, available: 800 });
  assert.equal(g.t0, T0 - 20_000);
  assert.equal(g.last, T0 + 90_000);
  assert.equal(g.t1, T0 + 90_000);
});

test("the axis steps are round numbers of seconds, about 78 px apart", () => {
  assert.equal(niceStep(100, 10), 10);
  assert.equal(niceStep(100, 4), 30);
  assert.equal(niceStep(10_000_000, 2), 604800); // the largest step, however long the span
  assert.deepEqual(axisTicks({ t0: 0, t1: 60_000, left: 300, right: 774 }), [0, 10, 20, 30, 40, 50, 60]);
  assert.deepEqual(axisTicks({ t0: 0, t1: 95_000, left: 0, right: 100 }), [0, 60]);
});
