// Steering's pure parts (static/todoweb/panel_steering.js): how a message's state and a
// question's outcome are worded, the countdown, what a note may be, and how lists
// arriving in any order are merged.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  allowLabel,
  countdownText,
  formatCountdown,
  mergeMessages,
  mergeQuestions,
  messageStateParts,
  messageStateText,
  noteProblem,
  questionBadge,
  questionOutcome,
  questionState,
  questionTitle,
} from "../../static/todoweb/panel_steering.js";

const NOW = Date.parse("2025-01-01T12:00:00Z");
const message = (fields) => ({
  id: 1,
  kind: "edit",
  revision: 2,
  text: "",
  at: "2025-01-01T11:50:00Z",
  state: "waiting",
  told_at: null,
  told_via: null,
  kept_in: null,
  ...fields,
});
const question = (fields) => ({
  id: 1,
  kind: "plan",
  tool: "ExitPlanMode",
  text: "# Plan",
  detail: "",
  at: "2025-01-01T11:58:00Z",
  expires_at: "2025-01-01T12:05:00Z",
  state: "open",
  feedback: "",
  decided_at: null,
  ...fields,
});

test("a message waits, is told when and by which route, then kept in a revision", () => {
  assert.equal(messageStateText(message({}), NOW), "waiting for the agent");
  const told = message({ state: "told", told_at: "2025-01-01T11:57:00Z", told_via: "Claude Code hook (Bash)" });
  assert.equal(messageStateText(told, NOW), "told 3 min ago via Claude Code hook (Bash)");
  assert.equal(messageStateText({ ...told, state: "kept", kept_in: 4 }, NOW), "told 3 min ago via Claude Code hook (Bash), kept in revision 4");
});

test("a message's state leaves out what the server did not say", () => {
  // Told, the route unknown.
  assert.equal(messageStateText(message({ state: "told", told_at: "2025-01-01T11:59:55Z" }), NOW), "told just now");
  // Kept with no record of its telling.
  assert.equal(messageStateText(message({ state: "kept", kept_in: 3 }), NOW), "kept in revision 3");
  assert.deepEqual(messageStateParts(message({ state: "kept", kept_in: 3 })), {
    words: "",
    toldAt: null,
    via: "",
    keptWords: "kept in ",
    keptIn: 3,
  });
  // A waiting message shows no time or route even if the fields carry something.
  assert.equal(messageStateText(message({ told_via: "MCP" }), NOW), "waiting for the agent");
});

test("the countdown shows minutes and seconds, hours past an hour, never below zero", () => {
  assert.equal(formatCountdown(0), "0:00");
  assert.equal(formatCountdown(0.2), "0:01"); // a part of a second still to go counts
  assert.equal(formatCountdown(59), "0:59");
  assert.equal(formatCountdown(60), "1:00");
  assert.equal(formatCountdown(299.5), "5:00");
  assert.equal(formatCountdown(3599), "59:59");
  assert.equal(formatCountdown(3600), "1:00:00");
  assert.equal(formatCountdown(3723), "1:02:03");
  assert.equal(formatCountdown(-5), "0:00");
});

test("an open question counts down to its expiry by this browser's clock, then is expired", () => {
  const open = question({});
  assert.equal(questionState(open, NOW), "open");
  assert.equal(countdownText(open, NOW), " · 5:00 left to answer");
  const late = Date.parse("2025-01-01T12:05:00Z");
  assert.equal(questionState(open, late), "expired");
  assert.equal(countdownText(open, late), "");
  assert.equal(questionBadge(open, late), "expired");
  assert.equal(questionOutcome(open, "", late), "No answer in time: the agent's own prompt asked instead.");
  // A decided question keeps its answer after the time is up.
  assert.equal(questionState(question({ state: "denied" }), late), "denied");
});

test("a question whose asker hung up is abandoned: said so, no countdown, never reopened", () => {
  const abandoned = question({ state: "abandoned" });
  assert.equal(questionState(abandoned, NOW), "abandoned");
  assert.equal(countdownText(abandoned, NOW), "");
  assert.equal(questionBadge(abandoned, NOW), "abandoned");
  assert.equal(
    questionOutcome(abandoned, "", NOW),
    "The agent stopped waiting: its request ended before an answer came, so none is taken.",
  );
  // An open copy arriving late (a fresh read started before) does not bring it back.
  assert.deepEqual(mergeQuestions([abandoned], [question({})]), [abandoned]);
});

test("a question is worded by its kind: a plan is approved, a tool allowed", () => {
  assert.equal(questionTitle(question({})), "The agent asks you to approve its plan");
  assert.equal(questionTitle(question({ kind: "permission", tool: "Bash" })), "The agent asks to use Bash");
  assert.equal(questionTitle(question({ kind: "permission", tool: null })), "The agent asks to use a tool");
  assert.equal(allowLabel(question({})), "Approve plan");
  assert.equal(allowLabel(question({ kind: "permission" })), "Allow");
  assert.equal(questionBadge(question({}), NOW), "waiting for an answer");
  assert.equal(questionBadge(question({ state: "allowed" }), NOW), "approved");
  assert.equal(questionBadge(question({ kind: "permission", state: "allowed" }), NOW), "allowed");
  assert.equal(questionOutcome(question({ state: "allowed" }), "alice", NOW), "Approved by alice.");
  assert.equal(questionOutcome(question({ kind: "permission", state: "allowed" }), "", NOW), "Allowed.");
  assert.equal(questionOutcome(question({ state: "denied" }), "you", NOW), "Denied by you.");
  assert.equal(questionOutcome(question({}), "", NOW), "");
});

test("a note must say something and fit in 2,000 characters, counted as code points", () => {
  assert.equal(noteProblem(""), "Write something for the agent first.");
  assert.equal(noteProblem(" \n\t "), "Write something for the agent first.");
  assert.equal(noteProblem("Use the staging database"), "");
  assert.equal(noteProblem("🚀".repeat(2000)), ""); // 4,000 UTF-16 units, 2,000 characters
  assert.equal(
    noteProblem("a".repeat(2001)),
    "Your message is 2,001 characters long: at most 2,000 fit. Shorten it and send again.",
  );
});

test("lists merge in any order: a state never goes back, the newest of each are kept", () => {
  const waiting = message({ id: 1 });
  const told = message({ id: 1, state: "told", told_at: "2025-01-01T11:57:00Z", told_via: "MCP" });
  const kept = { ...told, state: "kept", kept_in: 4 };
  assert.deepEqual(mergeMessages([kept], [waiting]), [kept]); // a late, older frame
  assert.deepEqual(mergeMessages([waiting], [told]), [told]);
  // The page's own new note, then a frame made before it: both kept, oldest first.
  const note = message({ id: 7, kind: "note", text: "Hi" });
  assert.deepEqual(mergeMessages([note], [told]).map((m) => m.id), [1, 7]);
  const many = Array.from({ length: 25 }, (_, i) => message({ id: i + 1 }));
  assert.deepEqual(mergeMessages([], many).map((m) => m.id), many.slice(5).map((m) => m.id));

  const open = question({ id: 3 });
  const allowed = question({ id: 3, state: "allowed", feedback: "Fine" });
  assert.deepEqual(mergeQuestions([allowed], [open]), [allowed]);
  // The agent stopped waiting: the same state with an earlier expiry is the news.
  const sooner = question({ id: 3, expires_at: "2025-01-01T12:00:30Z" });
  assert.deepEqual(mergeQuestions([open], [sooner]), [sooner]);
  assert.deepEqual(mergeQuestions([question({ id: 3, state: "expired" })], [allowed]), [allowed]);
  assert.equal(mergeQuestions([], Array.from({ length: 12 }, (_, i) => question({ id: i + 1 }))).length, 10);
});
