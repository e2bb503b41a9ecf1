// The board's time formats (static/todoweb/live.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { formatDuration, timeAgo } from "../../static/todoweb/live.js";

test("formatDuration gives nothing for a step without a duration", () => {
  assert.equal(formatDuration(null), "");
  assert.equal(formatDuration(undefined), "");
});

test("formatDuration counts seconds, then minutes and seconds, then hours and minutes", () => {
  assert.equal(formatDuration(0), "0s");
  assert.equal(formatDuration(59.4), "59s");
  assert.equal(formatDuration(59.5), "1m 00s"); // rounded first, then split
  assert.equal(formatDuration(61), "1m 01s");
  assert.equal(formatDuration(3599), "59m 59s");
  assert.equal(formatDuration(3600), "1h 00m");
  assert.equal(formatDuration(3661), "1h 01m");
  assert.equal(formatDuration(25 * 3600 + 61), "25h 01m");
});

test("timeAgo rounds down to the largest whole unit", () => {
  const now = Date.parse("2025-01-01T12:00:00Z");
  const ago = (iso) => timeAgo(iso, now);
  assert.equal(ago("2025-01-01T12:00:00Z"), "just now");
  assert.equal(ago("2025-01-01T11:59:51Z"), "just now");
  assert.equal(ago("2025-01-01T11:59:50Z"), "10s ago");
  assert.equal(ago("2025-01-01T11:59:01Z"), "59s ago");
  assert.equal(ago("2025-01-01T11:59:00Z"), "1 min ago");
  assert.equal(ago("2025-01-01T11:00:01Z"), "59 min ago");
  assert.equal(ago("2025-01-01T11:00:00Z"), "1 h ago");
  assert.equal(ago("2024-12-31T12:00:01Z"), "23 h ago");
  assert.equal(ago("2024-12-31T12:00:00Z"), "1 d ago");
  assert.equal(ago("2024-12-29T11:00:00Z"), "3 d ago");
});

test("timeAgo says 'just now' for a clock ahead of the browser's, and nothing without a time", () => {
  const now = Date.parse("2025-01-01T12:00:00Z");
  assert.equal(timeAgo("2025-01-01T12:05:00Z", now), "just now");
  assert.equal(timeAgo("", now), "");
  assert.equal(timeAgo(null, now), "");
});
