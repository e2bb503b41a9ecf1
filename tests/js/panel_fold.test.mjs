// Long plans' folding (static/todoweb/panel_fold.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { foldLabel, foldPlan, foldedNow, isFinished } from "../../static/todoweb/panel_fold.js";

const plan = (...statuses) => statuses.map((status, i) => ({ id: String(i + 1), status }));
const many = (n, status) => Array.from({ length: n }, () => status);

test("a plan of 12 steps or fewer does not fold, and has no jump", () => {
  const fold = foldPlan(plan(...many(11, "completed"), "in_progress"), 12);
  assert.equal(fold.long, false);
  assert.equal(fold.folds, false);
  assert.equal(fold.current, "12");
});

test("past 12 steps the finished ones fold and the current step is the one to jump to", () => {
  const fold = foldPlan(plan(...many(9, "completed"), "cancelled", "in_progress", "pending", "pending"), 12);
  assert.deepEqual(fold, {
    long: true,
    folds: true,
    finished: 10,
    label: "10 completed or cancelled steps",
    current: "11",
  });
});

test("a long plan with nothing finished has nothing to fold, yet can jump", () => {
  const fold = foldPlan(plan("pending", "in_progress", ...many(12, "pending")), 12);
  assert.equal(fold.folds, false);
  assert.equal(fold.long, true);
  assert.equal(fold.current, "2");
});

test("failed and blocked steps never fold: they want a look", () => {
  const fold = foldPlan(plan(...many(10, "failed"), "blocked", "completed", "pending"), 12);
  assert.equal(fold.finished, 1);
  assert.equal(isFinished({ status: "failed" }), false);
  assert.equal(isFinished({ status: "blocked" }), false);
  assert.equal(isFinished({ status: "cancelled" }), true);
});

test("with several steps in progress the first is the current one; with none there is none", () => {
  assert.equal(foldPlan(plan(...many(13, "pending"), "in_progress", "in_progress"), 12).current, "14");
  assert.equal(foldPlan(plan(...many(14, "completed")), 12).current, null);
});

test("the toggle's words count and name what it hides", () => {
  assert.equal(foldLabel(1, 0), "1 completed step");
  assert.equal(foldLabel(13, 0), "13 completed steps");
  assert.equal(foldLabel(0, 1), "1 cancelled step");
  assert.equal(foldLabel(0, 2), "2 cancelled steps");
  assert.equal(foldLabel(3, 1), "4 completed or cancelled steps");
});

test("folded until the person chooses, then their choice", () => {
  assert.equal(foldedNow(null), true);
  assert.equal(foldedNow(true), false); // they opened it
  assert.equal(foldedNow(false), true);
});
