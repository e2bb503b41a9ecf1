// The plan editor's pure parts (static/todoweb/panel_editor.js): re-applying a person's
// edits to the agent's newer plan, and the list the edits endpoint takes.
import assert from "node:assert/strict";
import { test } from "node:test";

import { rebase, rowOf, todosOf } from "../../static/todoweb/panel_editor.js";

const step = (id, content, status = "pending", extra = {}) => ({ id, content, status, ...extra });
const BASE = [step("1", "Read the code"), step("2", "Fix the bug"), step("3", "Run the tests")];
const rows = (steps) => steps.map(rowOf);
// What a rebased list says, one "id key content status" line per row.
const lines = (result) => result.map((r) => `${r.id} ${r.key} ${r.content} ${r.status}`);

test("the person's reworded text and the agent's new status both survive", () => {
  const mine = rows(BASE);
  mine[1].content = "Fix the bug in the parser";
  const theirs = [step("1", "Read the code", "completed"), step("2", "Fix the bug", "in_progress"), BASE[2], step("4", "Write a changelog entry")];
  assert.deepEqual(lines(rebase(BASE, mine, theirs)), [
    "1 step-1 Read the code completed",
    "2 step-2 Fix the bug in the parser in_progress",
    "3 step-3 Run the tests pending",
    "4 step-4 Write a changelog entry pending",
  ]);
});

test("the person's status wins over the agent's for the same step; the agent's text stays", () => {
  const mine = rows(BASE);
  mine[0].status = "cancelled";
  const theirs = [step("1", "Read the code first", "completed"), BASE[1], BASE[2]];
  const result = rebase(BASE, mine, theirs);
  assert.equal(lines(result)[0], "1 step-1 Read the code first cancelled");
  // The row's original is now the agent's step: unchecking goes back to its status.
  assert.equal(result[0].original, theirs[0]);
});

test("a step the person removed stays removed, whatever the agent did to it", () => {
  const mine = rows(BASE).filter((row) => row.id !== "3");
  const theirs = [BASE[0], BASE[1], step("3", "Run the tests", "in_progress")];
  assert.deepEqual(lines(rebase(BASE, mine, theirs)), ["1 step-1 Read the code pending", "2 step-2 Fix the bug pending"]);
});

test("a step the agent dropped comes back only if the person changed it, in its place", () => {
  const mine = rows(BASE);
  mine[1].status = "completed";
  const theirs = [BASE[0], step("5", "Deploy")];
  assert.deepEqual(lines(rebase(BASE, mine, theirs)), [
    "1 step-1 Read the code pending",
    "2 step-2 Fix the bug completed",
    "5 step-5 Deploy pending",
  ]);
});

test("the person's order wins when they reordered; the agent's new step follows the one it followed", () => {
  const mine = rows([BASE[2], BASE[0], BASE[1]]);
  const theirs = [BASE[0], BASE[1], BASE[2], step("4", "Tag the release")];
  assert.deepEqual(
    rebase(BASE, mine, theirs).map((r) => r.id),
    ["3", "4", "1", "2"],
  );
});

test("the agent's order wins when the person did not reorder", () => {
  const mine = rows(BASE);
  const theirs = [BASE[2], BASE[0], BASE[1]];
  assert.deepEqual(
    rebase(BASE, mine, theirs).map((r) => r.id),
    ["3", "1", "2"],
  );
});

test("a step the person added keeps its place after the row before it", () => {
  const added = { key: "new-1", id: null, content: "Ask for a review", status: "pending", original: null };
  const mine = [rowOf(BASE[0]), added, rowOf(BASE[1]), rowOf(BASE[2])];
  const theirs = [BASE[0], BASE[1], step("3", "Run the tests", "completed")];
  const result = rebase(BASE, mine, theirs);
  assert.deepEqual(lines(result), [
    "1 step-1 Read the code pending",
    "null new-1 Ask for a review pending",
    "2 step-2 Fix the bug pending",
    "3 step-3 Run the tests completed",
  ]);
  assert.notEqual(result[1], added); // a copy: the old form's row is not shared
});

test("todosOf sends canonical fields and keeps what the form does not show", () => {
  const original = step("1", "Read the code", "in_progress", {
    active_form: "Reading the code",
    notes: "start with plan.py",
    priority: null,
    blocked_by: ["2"],
  });
  assert.deepEqual(todosOf([rowOf(original)]), [
    {
      id: "1",
      content: "Read the code",
      status: "in_progress",
      active_form: "Reading the code",
      notes: "start with plan.py",
      blocked_by: ["2"],
    },
  ]);
});

test("todosOf drops a reworded step's 'doing' text, trims the text, sends new steps without an id", () => {
  const reworded = rowOf(step("1", "Read", "in_progress", { active_form: "Reading", owner: "ana", blocked_by: [] }));
  reworded.content = "  Read the docs  ";
  const added = { key: "new-1", id: null, content: "Ship it", status: "pending", original: null };
  assert.deepEqual(todosOf([reworded, added]), [
    { id: "1", content: "Read the docs", status: "in_progress", owner: "ana" },
    { content: "Ship it", status: "pending" },
  ]);
});
