// The panel's timeline chart, in plain SVG: progress over time in a band at the top,
// then one row per step with a bar from when it started to when it finished (growing
// while it runs), reopened and dropped steps marked, and a cursor at the revision the
// scrubber shows. Agent text reaches the chart only as text nodes. What it shows and
// where comes from panel_timeline_layout.js; this module draws it.

import { History, axisTicks, buildRows, clock, describe, elapsed, layout, ms } from "./panel_timeline_layout.js";

const NS = "http://www.w3.org/2000/svg";
const ENDS = { completed: "✓", failed: "✗" };

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== null && value !== undefined && value !== false) node.setAttribute(key, String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// Labels longer than their column end in "…". Measured on a canvas in the labels' own
// font (widths vary by script and weight), so that a long plan costs no page layout.
const measure = document.createElement("canvas").getContext("2d");

function fitLabels(labels, room) {
  const first = labels[0];
  if (!first) return;
  const style = getComputedStyle(first);
  const base = `${style.fontSize} ${style.fontFamily}`;
  for (const text of labels) {
    const bold = text.classList.contains("status-in_progress") ? "700 " : "";
    measure.font = `${text.classList.contains("tl-dropped") ? "italic " : ""}${bold}${base}`;
    const full = text.textContent;
    if (measure.measureText(full).width <= room) continue;
    const chars = Array.from(full); // never half an emoji
    const cut = (n) => `${chars.slice(0, n).join("").trimEnd()}…`;
    let fits = 0;
    let over = chars.length;
    while (over - fits > 1) {
      const middle = Math.floor((fits + over) / 2);
      if (measure.measureText(cut(middle)).width <= room) fits = middle;
      else over = middle;
    }
    text.textContent = cut(fits);
  }
}

export class TimelineChart {
  constructor(container, { onPick }) {
    this.container = container;
    this.onPick = onPick;
    this.data = null;
    this.history = new History();
    this.cursor = null; // the revision the scrubber shows
    this.replaying = false;
    // The width comes from the observer: reading it in render() would force a layout per update.
    this.available = container.clientWidth;
    new ResizeObserver(([entry]) => {
      const available = Math.round(entry.contentRect.width);
      if (available === this.available) return;
      this.available = available;
      this.render();
    }).observe(container);
  }

  update({ data, cursor, replaying }) {
    if (data !== undefined) this.data = data;
    if (cursor !== undefined) this.cursor = cursor;
    if (replaying !== undefined) this.replaying = replaying;
    this.render();
  }

  render(now = Date.now()) {
    if (!this.data) return;
    const rows = buildRows(this.data, this.history, ms(this.data.session.updated_at));
    const g = layout({ data: this.data, history: this.history, rows, now, available: this.available });
    this.geometry = g;
    const root = svg("svg", {
      class: `tl${g.narrow ? " tl-narrow" : ""}${g.wide ? " tl-wide" : ""}`,
      width: g.width,
      height: g.height,
      viewBox: `0 0 ${g.width} ${g.height}`,
      role: "img",
      "aria-labelledby": "tl-title tl-desc",
    });
    const { counts, revision } = this.data;
    root.append(
      svg("title", { id: "tl-title" }, `Timeline of ${rows.length} step${rows.length === 1 ? "" : "s"}`),
      svg(
        "desc",
        { id: "tl-desc" },
        `From ${clock(g.t0)}, over ${elapsed((g.end - g.t0) / 1000)}: ` +
          `${counts.completed} of ${counts.total} completed after ${revision} revisions.`,
      ),
      svg(
        "defs",
        {},
        svg(
          "pattern",
          { id: "tl-hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
          svg("rect", { class: "tl-hatch-bg", width: 6, height: 6 }),
          svg("line", { class: "tl-hatch-line", x1: 0, y1: 0, x2: 0, y2: 6 }),
        ),
        svg("clipPath", { id: "tl-labels" }, svg("rect", { x: 0, y: 0, width: g.labelRoom + 10, height: g.height })),
      ),
      this.axis(g),
      this.progressBand(g),
    );
    this.running = [];
    const labels = svg("g", { class: "tl-labels", "clip-path": "url(#tl-labels)" });
    const steps = svg("g", { class: "tl-rows" });
    rows.forEach((row, index) => {
      steps.append(this.stepRow(g, row, index));
      labels.append(
        svg(
          "text",
          {
            class: `tl-label status-${row.step.status}${row.dropped ? " tl-dropped" : ""}`,
            x: g.narrow ? g.left : 4,
            y: g.narrow ? g.rowTop(index) + 13 : g.rowMid(index) + 4,
          },
          row.dropped ? `⊘ ${row.step.content}` : row.step.content,
        ),
      );
    });
    if (!rows.length) steps.append(svg("text", { class: "tl-empty", x: g.left, y: g.rowsTop + 17 }, "No steps yet."));
    root.append(steps);

    // Replaying: what came after the cursor is dimmed (the labels stay legible).
    const cursorAt = this.cursor !== null ? this.history.timeOf(this.cursor) : null;
    if (cursorAt !== null && this.replaying) {
      const cx = g.x(cursorAt);
      root.append(
        svg("rect", { class: "tl-future", x: cx, y: g.axisHeight, width: Math.max(0, g.width - cx), height: g.height }),
      );
    }
    root.append(labels);
    this.nowLine = null;
    if (g.growing) {
      this.nowLine = svg("line", { class: "tl-now", x1: g.x(now), x2: g.x(now), y1: g.bandTop, y2: g.height - 4 });
      root.append(this.nowLine);
    }
    if (cursorAt !== null) root.append(this.cursorMark(g, cursorAt));
    root.addEventListener("click", (event) => this.pick(event, root));
    this.container.replaceChildren(root);
    fitLabels(labels.children, g.labelRoom);
  }

  // Elapsed time since the first write, with grid lines down the whole chart.
  axis(g) {
    const grid = svg("g", { class: "tl-grid", "aria-hidden": "true" });
    for (const s of axisTicks(g)) {
      const gx = g.x(g.t0 + s * 1000);
      grid.append(
        svg("line", { x1: gx, x2: gx, y1: g.axisHeight - 4, y2: g.height - 4 }),
        svg(
          "text",
          { x: gx, y: g.axisHeight - 8, class: "tl-tick", "text-anchor": s === 0 ? "start" : "middle" },
          s ? elapsed(s) : clock(g.t0, false),
        ),
      );
    }
    return grid;
  }

  // Progress over time: the share of steps completed after each revision; ✎ marks people's edits.
  progressBand(g) {
    const { data } = this;
    const band = svg("g", { class: "tl-band" });
    const y = (fraction) => g.bandTop + g.bandHeight - fraction * g.bandHeight;
    band.append(
      svg("rect", { class: "tl-band-bg", x: g.left, y: g.bandTop, width: g.right - g.left, height: g.bandHeight }),
      svg("line", { class: "tl-band-mid", x1: g.left, x2: g.right, y1: y(0.5), y2: y(0.5) }),
    );
    const points = this.history.points.length
      ? this.history.points
      : [{ at: g.last, completed: data.counts.completed, total: data.counts.total, revision: data.revision }];
    let level = 0;
    let path = `M${g.x(points[0].at)},${y(0)}`;
    for (const point of points) {
      const next = point.total ? point.completed / point.total : 0;
      path += ` L${g.x(point.at)},${y(level)} L${g.x(point.at)},${y(next)}`;
      level = next;
    }
    const lastX = g.x(points[points.length - 1].at);
    this.tail = svg("rect", {
      class: "tl-area tl-tail",
      x: lastX,
      y: y(level),
      width: Math.max(0, g.x(g.end) - lastX),
      height: y(0) - y(level),
    });
    band.append(
      svg("path", { class: "tl-area", d: `${path} L${lastX},${y(0)} Z` }),
      svg("path", { class: "tl-line", d: path.replace(/^M[^L]*L/, "M") }),
      this.tail,
    );
    for (const point of points) {
      if (point.author !== "user") continue;
      band.append(
        svg(
          "text",
          { class: "tl-edit", x: g.x(point.at), y: g.bandTop - 3, "text-anchor": "middle" },
          "✎",
          svg("title", {}, `Revision ${point.revision}: a person edited the plan (${clock(point.at)})`),
        ),
      );
    }
    // Above the band on a phone, in the label column otherwise.
    const where = g.narrow ? { x: g.left, y: g.bandTop - 4 } : { x: 0, y: g.bandTop + g.bandHeight / 2 + 4 };
    band.append(
      svg(
        "text",
        { class: "tl-band-label", ...where },
        "Progress ",
        svg("tspan", { class: "tl-band-value" }, `${Math.round(level * 100)}%`),
      ),
    );
    return band;
  }

  // One step: a dotted line while it waited, its bar while it ran, and its marks.
  stepRow(g, row, index) {
    const { step } = row;
    const classes = ["tl-row", `status-${step.status}`];
    if (row.dropped) classes.push("tl-dropped");
    if (row.reopened) classes.push("tl-reopened");
    if (row.running) classes.push("tl-running");
    const group = svg("g", { class: classes.join(" "), "data-id": step.id }, svg("title", {}, describe(row)));
    const barY = g.barY(index);
    const mid = g.rowMid(index);
    if (index % 2 === 0) {
      group.append(svg("rect", { class: "tl-stripe", x: 0, y: g.rowTop(index), width: g.width, height: g.rowHeight }));
    }
    const waited = row.started ?? row.end ?? g.end;
    if (row.firstSeen !== null && waited > row.firstSeen) {
      group.append(svg("line", { class: "tl-wait", x1: g.x(row.firstSeen), x2: g.x(waited), y1: mid, y2: mid }));
    }
    let barEnd = null;
    if (row.started !== null) {
      const start = g.x(row.started);
      const finish = row.running ? g.end : (row.end ?? g.last);
      const width = Math.max(3, g.x(finish) - start);
      const bar = svg("rect", { class: "tl-bar", x: start, y: barY, width, height: g.barHeight, rx: 3 });
      group.append(bar);
      barEnd = start + width;
      if (row.running && g.growing) {
        const cap = svg("circle", { class: "tl-cap", cx: barEnd, cy: mid, r: 4 });
        group.append(cap);
        this.running.push({ bar, cap, start });
      }
    } else if (row.end !== null && step.status === "completed") {
      // Checked off without ever being in progress: a moment, not a span.
      barEnd = g.x(row.end);
      group.append(svg("rect", { class: "tl-bar tl-moment", x: barEnd - 2, y: barY, width: 4, height: g.barHeight, rx: 1 }));
    }
    if (row.dropped && row.end !== null) {
      group.append(svg("text", { class: "tl-mark tl-drop-mark", x: g.x(row.end) + 3, y: mid + 4 }, "⊘"));
    } else if (ENDS[step.status] && barEnd !== null) {
      group.append(svg("text", { class: "tl-mark", x: barEnd + 3, y: mid + 4 }, ENDS[step.status]));
    }
    // Where it was reopened (from the history; without it, at its start), on the bar.
    const reopenedAt = row.reopens.length ? row.reopens : row.reopened && row.started !== null ? [row.started] : [];
    for (const at of reopenedAt) {
      group.append(svg("text", { class: "tl-mark tl-reopen-mark", x: g.x(at), y: mid + 4, "text-anchor": "middle" }, "↺"));
    }
    return group;
  }

  // The revision the scrubber shows, tagged r<n>.
  cursorMark(g, at) {
    const cx = g.x(at);
    const tag = `r${this.cursor}`;
    const tagWidth = 10 + tag.length * 7;
    const tagX = Math.min(Math.max(cx - tagWidth / 2, 0), g.width - tagWidth);
    const tagY = g.bandTop + g.bandHeight + 1;
    return svg(
      "g",
      { class: "tl-cursor", "data-revision": this.cursor, "data-x": cx.toFixed(1) },
      svg("line", { x1: cx, x2: cx, y1: g.bandTop - 2, y2: g.height - 2 }),
      svg("rect", { x: tagX, y: tagY, width: tagWidth, height: 13, rx: 6 }),
      svg("text", { x: tagX + tagWidth / 2, y: tagY + 10, "text-anchor": "middle" }, tag),
    );
  }

  // A click on the chart picks the revision written at or before that moment.
  pick(event, root) {
    if (!this.history.points.length || !this.geometry) return;
    const box = root.getBoundingClientRect();
    const { t0, t1, left, right } = this.geometry;
    const px = event.clientX - box.left;
    if (px < left - 4) return;
    const t = t0 + ((Math.min(px, right) - left) / (right - left)) * (t1 - t0);
    const revision = this.history.revisionAt(t);
    if (revision !== null) this.onPick(revision);
  }

  // Each second: running bars stretch to now; past the right edge, the chart is drawn again.
  tick(now = Date.now()) {
    if (!this.data || !this.geometry || !this.geometry.growing) return;
    const { x, t1 } = this.geometry;
    if (now >= t1) {
      this.render(now);
      return;
    }
    const nx = x(now);
    for (const { bar, cap, start } of this.running) {
      bar.setAttribute("width", String(Math.max(3, nx - start)));
      cap.setAttribute("cx", String(Math.max(start + 3, nx)));
    }
    if (this.nowLine) {
      this.nowLine.setAttribute("x1", String(nx));
      this.nowLine.setAttribute("x2", String(nx));
    }
    if (this.tail) this.tail.setAttribute("width", String(Math.max(0, nx - Number(this.tail.getAttribute("x")))));
  }
}
