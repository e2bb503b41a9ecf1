// What the dashboard shows (static/todoweb/dashboard_model.js): families and sections
// in order, the totals, how far back the page knows the sessions, the sparklines.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  lastFolder,
  NOTHING_OLDER,
  NOT_KNOWN,
  countTotals,
  coverage,
  families,
  filterQuery,
  isNewer,
  leftTheOlder,
  mark,
  matches,
  sectionAlerts,
  sections,
  sessionsIn,
  snapshotOf,
  sparkLabel,
  sparkPoints,
} from "../../static/todoweb/dashboard_model.js";

const STATES = ["active", "idle", "failed", "completed", "empty", "closed"];
const NO_FILTERS = { q: "", project: "", dialect: "", state: "", group: "" };
const at = (hhmm) => `2025-03-01T${hhmm}:00Z`;
const ms = (hhmm) => Date.parse(at(hhmm));

function summary(id, hhmm, extra = {}) {
  return { id, key: id, title: null, project: "web", dialect: "claude", state: "active", parent: null, revision: 1, updated_at: at(hhmm), ...extra };
}

// alpha (10:00) has a subagent alpha:helper (10:10); beta (10:05) failed elsewhere; delta is old.
function board() {
  const all = [
    summary("alpha", "10:00", { title: "Alpha run" }),
    summary("beta", "10:05", { project: "api", dialect: null, state: "failed" }),
    summary("alpha:helper", "10:10", { parent: "alpha", state: "idle" }),
    summary("delta", "09:00", { state: "completed" }),
  ];
  return new Map(all.map((s) => [s.id, s]));
}

// A family as "id(child,child)".
const shape = (family) =>
  family.children.length ? `${family.s.id}(${family.children.map(shape).join(",")})` : family.s.id;

test("families put subagents under their parent, newest activity first", () => {
  const shown = families(board(), NO_FILTERS, -Infinity);
  // alpha's newest activity is its helper's, at 10:10.
  assert.deepEqual(shown.map(shape), ["alpha(alpha:helper)", "beta", "delta"]);
  assert.equal(shown[0].newest, ms("10:10"));
  assert.equal(sessionsIn(shown[0]), 2);
});

test("a parent shows with a subagent that matches, even when it does not", () => {
  assert.deepEqual(families(board(), { ...NO_FILTERS, state: "idle" }, -Infinity).map(shape), ["alpha(alpha:helper)"]);
  assert.deepEqual(families(board(), { ...NO_FILTERS, q: "BETA" }, -Infinity).map(shape), ["beta"]);
  // Known back to 10:01 only: alpha (10:00) shows for its helper, delta not at all.
  assert.deepEqual(families(board(), NO_FILTERS, ms("10:01")).map(shape), ["alpha(alpha:helper)", "beta"]);
});

test("a subagent whose parent the page does not hold stands on its own; ties go by id", () => {
  const summaries = new Map([
    ["b", summary("b", "10:00")],
    ["a", summary("a", "10:00")],
    ["orphan", summary("orphan", "09:00", { parent: "elsewhere" })],
  ]);
  assert.deepEqual(families(summaries, NO_FILTERS, -Infinity).map(shape), ["a", "b", "orphan"]);
});

test("matching looks at the title and the key, ignoring case, and at project, dialect and state", () => {
  const s = summary("Run-42", "10:00", { title: "Deploy API", dialect: null });
  assert.equal(matches(s, { ...NO_FILTERS, q: "deploy" }), true);
  assert.equal(matches(s, { ...NO_FILTERS, q: "run-4" }), true);
  assert.equal(matches(s, { ...NO_FILTERS, q: "web" }), false); // the project is not searched
  assert.equal(matches(s, { ...NO_FILTERS, project: "api" }), false);
  assert.equal(matches(s, { ...NO_FILTERS, dialect: "kimi" }), false);
  assert.equal(matches(s, { ...NO_FILTERS, state: "failed" }), false);
  assert.equal(matches(s, { ...NO_FILTERS, project: "web", state: "active" }), true);
});

test("sections group families by project or dialect, in the order of their newest family", () => {
  const shown = families(board(), NO_FILTERS, -Infinity);
  const named = (list) => list.map((section) => `${section.name}: ${section.families.map((f) => f.s.id).join(" ")}`);
  assert.deepEqual(named(sections(shown, "")), [": alpha beta delta"]);
  assert.deepEqual(named(sections(shown, "project")), ["web: alpha delta", "api: beta"]);
  assert.deepEqual(named(sections(shown, "dialect")), ["claude: alpha delta", "no dialect: beta"]);
});

test("a section's alerts count failed and idle sessions, subagents included", () => {
  const shown = families(board(), NO_FILTERS, -Infinity);
  assert.equal(sectionAlerts(shown), "1 failed · 1 idle");
  const failing = families(
    new Map([
      ["x", summary("x", "10:00", { state: "failed" })],
      ["y", summary("y", "10:01", { state: "failed", parent: "x" })],
    ]),
    NO_FILTERS,
    -Infinity,
  );
  assert.equal(sectionAlerts(failing), "2 failed");
  assert.equal(sectionAlerts([]), "");
});

test("the totals are the server's until the snapshot, then counted here plus the server's older ones", () => {
  const initial = { active: 9 };
  const args = { summaries: board(), filters: NO_FILTERS, states: STATES, initial };
  assert.equal(countTotals({ ...args, snapshot: null, olderCounts: null }), initial);
  const partial = { complete: false, floor: mark(at("10:01")) };
  assert.equal(countTotals({ ...args, snapshot: partial, olderCounts: null }), null); // still asking
  // Newer than 10:01: beta (failed) and the helper (idle); the server counts the rest.
  assert.deepEqual(countTotals({ ...args, snapshot: partial, olderCounts: { active: 1, completed: 4 } }), {
    active: 1,
    idle: 1,
    failed: 1,
    completed: 4,
    empty: 0,
    closed: 0,
  });
  // Every state is counted whatever the state filter: the totals are the filter's links.
  const all = countTotals({ ...args, filters: { ...NO_FILTERS, state: "failed" }, snapshot: { complete: true, floor: NOTHING_OLDER }, olderCounts: null });
  assert.deepEqual(all, { active: 1, idle: 1, failed: 1, completed: 1, empty: 0, closed: 0 });
});

test("the page knows back to the nearer of the snapshot's floor and the server's pages", () => {
  const ten = mark(at("10:00"));
  const nine = mark(at("09:00"));
  assert.equal(coverage(null, NOTHING_OLDER), NOTHING_OLDER);
  assert.equal(coverage(null, ten), ten);
  assert.equal(coverage({ complete: true, floor: NOTHING_OLDER }, ten), NOTHING_OLDER);
  assert.equal(coverage({ complete: false, floor: nine }, ten), nine);
  assert.equal(coverage({ complete: false, floor: ten }, nine), nine);
  assert.equal(coverage({ complete: false, floor: ten }, NOT_KNOWN), ten);
});

test("a snapshot below its limit holds every session; at its limit it reaches back to its oldest", () => {
  const sessions = [summary("a", "10:00"), summary("b", "09:30"), summary("c", "11:00")];
  assert.deepEqual(snapshotOf(sessions, 4), { complete: true, floor: NOTHING_OLDER });
  assert.deepEqual(snapshotOf(sessions, 3), { complete: false, floor: { iso: at("09:30"), ms: ms("09:30") } });
  assert.deepEqual(snapshotOf([], 0), { complete: false, floor: NOTHING_OLDER });
});

test("a summary replaces the page's unless it is of an older revision", () => {
  assert.equal(isNewer(undefined, { revision: 1 }), true);
  assert.equal(isNewer({ revision: 3 }, { revision: 3 }), true);
  assert.equal(isNewer({ revision: 4 }, { revision: 3 }), false);
});

test("a session leaves the server's older counts when it was last active before the floor", () => {
  const partial = { complete: false, floor: mark(at("10:00")) };
  const now = summary("s", "10:30", { created_at: at("09:59") });
  assert.equal(leftTheOlder(null, summary("s", "09:00"), now), false);
  assert.equal(leftTheOlder({ complete: true, floor: NOTHING_OLDER }, summary("s", "09:00"), now), false);
  assert.equal(leftTheOlder(partial, summary("s", "09:00"), now), true);
  assert.equal(leftTheOlder(partial, summary("s", "10:20"), now), false);
  assert.equal(leftTheOlder(partial, null, now), true); // new to the page: its creation counts
});

test("the query names only the filters that are set", () => {
  const filters = { q: "fix bug", project: "", dialect: "kimi", state: "", group: "project" };
  assert.equal(filterQuery(filters, { group: "" }).toString(), "q=fix+bug&dialect=kimi");
  assert.equal(filterQuery(filters, { state: "idle" }).toString(), "q=fix+bug&dialect=kimi&state=idle&group=project");
  assert.equal(filterQuery(NO_FILTERS).toString(), "");
});

// The same cases as tests/test_pages.py checks views.sparkline_points with: both draw a card's line.
test("the sparkline runs x by time over 0..100 and y from 19 (0 %) to 1 (100 %)", () => {
  assert.equal(sparkPoints([], 0.5), "0,10 100,10");
  assert.equal(sparkPoints(null, 1.0), "0,1 100,1");
  assert.equal(
    sparkPoints(
      [
        [100, 0.0],
        [110, 0.5],
        [140, 1.0],
      ],
      1.0,
    ),
    "0,19 25,10 100,1",
  );
});

test("the sparkline spreads points of one second by revision, and rounds to a tenth", () => {
  assert.equal(sparkPoints([[5, 0], [5, 0.25], [5, 1]], 1), "0,19 50,14.5 100,1");
  assert.equal(sparkPoints([[7, 0.25]], 0.25), "0,14.5 100,14.5");
  assert.equal(sparkPoints([[0, 0], [1, 0], [3, 0.1]], 0.1), "0,19 33.3,19 100,17.2");
});

test("the sparkline's label says where progress started and where it is", () => {
  assert.equal(sparkLabel([[0, 0.25], [1, 0.5]], 0.75), "Progress over time: from 25% to 75%");
  assert.equal(sparkLabel(null, 1 / 3), "Progress over time: from 33% to 33%");
});

test("a card names the last folder of where the agent works, on any system", () => {
  assert.equal(lastFolder("/home/me/shop"), "shop");
  assert.equal(lastFolder("/home/me/shop/"), "shop");
  assert.equal(lastFolder("C:\\work\\shop"), "shop");
  assert.equal(lastFolder(""), "");
  assert.equal(lastFolder("/"), "");
});
