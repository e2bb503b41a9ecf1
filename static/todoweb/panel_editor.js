// "Edit plan": a member rewords, reorders, checks off, cancels, adds or removes steps,
// then saves the whole list with the revision it was based on (If-Match). If the agent
// wrote in between, the server answers 409 with the plan as it is now; the person's
// edits are kept and can be re-applied to it. Live revisions never touch the form.

import { el, fromTemplate, setText } from "./live.js";
import { postJson } from "./panel_actions.js";

const KEPT_FIELDS = ["notes", "priority", "owner"];
const $ = (id) => document.getElementById(id);

let newKeys = 0;

// A row of the form: the step as the person edits it, and the step it was.
export function rowOf(step) {
  return { key: `step-${step.id}`, id: step.id, content: step.content, status: step.status, original: step };
}

function newRow() {
  newKeys += 1;
  return { key: `new-${newKeys}`, id: null, content: "", status: "pending", original: null };
}

const changedFrom = (row, step) => !step || step.content !== row.content || step.status !== row.status;
const rowClass = (row) => `edit-step status-${row.status}${changedFrom(row, row.original) ? " edited" : ""}`;

// The person's edits (`mine`, made on `base`) applied to the agent's newer plan `theirs`:
// what the person changed wins field by field, the rest is the agent's; steps the agent
// added keep their place; the person's order wins only if they reordered.
export function rebase(base, mine, theirs) {
  const baseById = new Map(base.map((step) => [step.id, step]));
  const theirsById = new Map(theirs.map((step) => [step.id, step]));
  const merged = (row) => {
    const was = baseById.get(row.id);
    const now = theirsById.get(row.id);
    // Gone from the agent's plan: kept (with its id, so its history comes back) only if the person changed it.
    if (!now) return changedFrom(row, was) ? row : null;
    return {
      ...rowOf(now),
      key: row.key,
      content: was && was.content !== row.content ? row.content : now.content,
      status: was && was.status !== row.status ? row.status : now.status,
    };
  };
  const kept = mine.filter((row) => row.id !== null && baseById.has(row.id));
  const baseOrder = base.map((step) => step.id).filter((id) => kept.some((row) => row.id === id));
  const reordered = baseOrder.join("\n") !== kept.map((row) => row.id).join("\n");

  const result = [];
  const placeAfter = (list, index, row) => {
    // After the nearest earlier row of `list` that is already placed; else first.
    for (let i = index - 1; i >= 0; i -= 1) {
      const at = result.findIndex((r) => r.key === list[i].key);
      if (at >= 0) {
        result.splice(at + 1, 0, row);
        return;
      }
    }
    result.unshift(row);
  };
  if (reordered) {
    for (const row of kept) {
      const step = merged(row);
      if (step) result.push(step);
    }
    const theirRows = theirs.map(rowOf);
    theirRows.forEach((row, index) => {
      if (!baseById.has(row.id) && !result.some((r) => r.id === row.id)) placeAfter(theirRows, index, row);
    });
  } else {
    for (const step of theirs) {
      const row = kept.find((r) => r.id === step.id);
      if (row) result.push(merged(row));
      else if (!baseById.has(step.id)) result.push(rowOf(step)); // not one the person removed
    }
    kept.forEach((row) => {
      if (!theirsById.has(row.id)) {
        const step = merged(row);
        if (step) placeAfter(mine, mine.indexOf(row), step);
      }
    });
  }
  mine.forEach((row, index) => {
    if (row.id === null) placeAfter(mine, index, { ...row });
  });
  return result;
}

// The list as the edits endpoint takes it (canonical fields; nulls left out).
export function todosOf(rows) {
  return rows.map((row) => {
    const todo = { content: row.content.trim(), status: row.status };
    const step = row.original;
    if (row.id !== null) todo.id = row.id;
    if (step) {
      // A reworded step's old "doing …" text would describe the old step.
      if (step.active_form && step.content === row.content) todo.active_form = step.active_form;
      for (const field of KEPT_FIELDS) if (step[field] !== null && step[field] !== undefined) todo[field] = step[field];
      if (step.blocked_by && step.blocked_by.length) todo.blocked_by = step.blocked_by;
    }
    return todo;
  });
}

export class PlanEditor {
  constructor({ config, onOpen, onSaved, onClose }) {
    this.config = config;
    this.onOpen = onOpen;
    this.onSaved = onSaved;
    this.onClose = onClose;
    this.form = $("plan-editor");
    this.list = $("editor-steps");
    this.status = $("editor-status");
    this.base = null; // the data the edits are made on
    this.rows = [];
    this.newer = null; // a newer revision that arrived while editing
    this.saving = false;

    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.save();
    });
    $("add-step").addEventListener("click", () => this.add(this.rows.length));
    $("editor-discard").addEventListener("click", () => this.close());
    $("editor-rebase").addEventListener("click", () => this.reapply(this.newer));
    $("conflict-reapply").addEventListener("click", () => this.reapply(this.conflict));
    $("conflict-restart").addEventListener("click", () => this.start(this.conflict));
    this.list.addEventListener("input", (event) => this.edited(event));
    this.list.addEventListener("change", (event) => this.edited(event));
    this.list.addEventListener("click", (event) => this.clicked(event));
    this.list.addEventListener("keydown", (event) => {
      // Enter in a step's text adds the next step (and does not submit the form).
      if (event.key === "Enter" && event.target.classList.contains("edit-content")) {
        event.preventDefault();
        this.add(this.indexOf(event.target) + 1);
      }
    });
  }

  get isOpen() {
    return !this.form.hidden;
  }

  start(data) {
    this.base = data;
    this.rows = data.todos.map(rowOf);
    this.newer = null;
    this.conflict = null;
    $("edit-note").value = this.isOpen ? $("edit-note").value : "";
    $("editor-newer").hidden = true;
    $("editor-conflict").hidden = true;
    setText($("editor-base"), data.revision);
    setText(this.status, "");
    this.form.hidden = false;
    this.onOpen();
    this.render();
    const first = this.list.querySelector(".edit-content");
    (first || $("add-step")).focus();
  }

  close() {
    this.form.hidden = true;
    this.base = null;
    this.rows = [];
    this.onClose();
  }

  // A revision the person has not seen: their edits stay, the form says so.
  newerArrived(data) {
    if (!this.isOpen || this.saving || data.revision <= this.base.revision) return;
    this.newer = data;
    const who = data.author === "user" ? "someone else" : "the agent";
    $("editor-newer").hidden = false;
    setText(
      $("editor-newer-text"),
      `Revision ${data.revision} arrived while you were editing (changed by ${who}). Your edits are kept, but they are based on revision ${this.base.revision}.`,
    );
  }

  reapply(theirs) {
    if (!theirs) return;
    this.rows = rebase(this.base.todos, this.rows, theirs.todos);
    this.base = theirs;
    this.newer = null;
    this.conflict = null;
    $("editor-newer").hidden = true;
    $("editor-conflict").hidden = true;
    setText($("editor-base"), theirs.revision);
    this.render();
    this.say(`Your edits are applied to revision ${theirs.revision}. Check them, then save.`);
    $("editor-save").focus();
  }

  say(text, { error = false } = {}) {
    this.status.classList.toggle("error", error);
    setText(this.status, text);
  }

  indexOf(node) {
    const item = node.closest(".edit-step");
    return this.rows.findIndex((row) => row.key === item.dataset.key);
  }

  add(index) {
    const row = newRow();
    this.rows.splice(index, 0, row);
    this.render();
    this.list.querySelector(`[data-key="${row.key}"] .edit-content`).focus();
  }

  edited(event) {
    const target = event.target;
    const index = this.indexOf(target);
    if (index < 0) return;
    const row = this.rows[index];
    const item = target.closest(".edit-step");
    if (target.classList.contains("edit-content")) {
      row.content = target.value;
    } else if (target.classList.contains("edit-status")) {
      row.status = target.value;
    } else if (target.classList.contains("edit-done")) {
      // Unchecking puts back the status the step had before (pending for a new one).
      const before = row.original && row.original.status !== "completed" ? row.original.status : "pending";
      row.status = target.checked ? "completed" : before;
    } else {
      return;
    }
    item.className = rowClass(row);
    item.querySelector(".edit-status").value = row.status;
    item.querySelector(".edit-done").checked = row.status === "completed";
  }

  clicked(event) {
    const button = event.target.closest("button");
    if (!button || button.getAttribute("aria-disabled") === "true") return;
    const index = this.indexOf(button);
    const row = this.rows[index];
    if (button.classList.contains("edit-up") || button.classList.contains("edit-down")) {
      const to = button.classList.contains("edit-up") ? index - 1 : index + 1;
      this.rows.splice(index, 1);
      this.rows.splice(to, 0, row);
      this.render();
      const kind = button.classList.contains("edit-up") ? "edit-up" : "edit-down";
      this.list.querySelector(`[data-key="${row.key}"] .${kind}`).focus();
      this.say(`Moved to position ${to + 1} of ${this.rows.length}.`);
    } else if (button.classList.contains("edit-remove")) {
      this.rows.splice(index, 1);
      this.render();
      const next = this.list.querySelectorAll(".edit-content")[Math.min(index, this.rows.length - 1)];
      (next || $("add-step")).focus();
      this.say(`Removed “${row.content || "new step"}”.`);
    }
  }

  // Each row is a copy of the page's <template id="edit-step-template">.
  render() {
    const total = this.rows.length;
    this.list.replaceChildren(
      ...this.rows.map((row, index) => {
        const n = index + 1;
        const item = fromTemplate("edit-step-template");
        item.className = rowClass(row);
        item.dataset.key = row.key;
        const done = item.querySelector(".edit-done");
        done.id = `edit-done-${row.key}`;
        done.checked = row.status === "completed";
        const doneLabel = item.querySelector(".edit-check label");
        doneLabel.htmlFor = done.id;
        setText(doneLabel, `Step ${n} done`);
        const content = item.querySelector(".edit-content");
        content.setAttribute("aria-label", `Step ${n}`);
        content.value = row.content;
        const select = item.querySelector(".edit-status");
        select.setAttribute("aria-label", `Status of step ${n}`);
        select.value = row.status;
        const up = item.querySelector(".edit-up");
        up.setAttribute("aria-label", `Move step ${n} up`);
        if (index === 0) up.setAttribute("aria-disabled", "true");
        const down = item.querySelector(".edit-down");
        down.setAttribute("aria-label", `Move step ${n} down`);
        if (index === total - 1) down.setAttribute("aria-disabled", "true");
        item.querySelector(".edit-remove").setAttribute("aria-label", `Remove step ${n}`);
        return item;
      }),
    );
  }

  async save() {
    if (this.saving) return;
    const blank = this.rows.findIndex((row) => !row.content.trim());
    if (blank >= 0) {
      this.say(`Step ${blank + 1} has no text: write it or remove the step.`, { error: true });
      this.list.querySelectorAll(".edit-content")[blank].focus();
      return;
    }
    const note = $("edit-note").value.trim();
    const body = { todos: todosOf(this.rows), ...(note ? { note } : {}) };
    this.saving = true;
    $("editor-save").disabled = true;
    this.say("Saving…");
    try {
      const data = await postJson(this.config.actions.edits, this.config.csrfToken, body, {
        "If-Match": String(this.base.revision),
      });
      this.form.hidden = true;
      this.onSaved(data);
    } catch (error) {
      if (error.status === 409 && error.body && error.body.data) this.showConflict(error.body.data);
      else this.say(error.message, { error: true });
    } finally {
      this.saving = false;
      $("editor-save").disabled = false;
    }
  }

  showConflict(current) {
    this.conflict = current;
    this.newer = null;
    $("editor-newer").hidden = true;
    setText(this.status, "");
    setText(
      $("conflict-text"),
      `You edited revision ${this.base.revision}; the plan is now at revision ${current.revision}. Your edits are not saved yet.`,
    );
    $("conflict-plan").replaceChildren(
      ...(current.todos.length
        ? current.todos.map((step) =>
            el("li", { class: `status-${step.status}` }, el("span", { class: "conflict-status" }, step.status.replace("_", " ")), " ", el("span", { class: "content" }, step.content)),
          )
        : [el("li", {}, "No steps.")]),
    );
    $("editor-conflict").hidden = false;
    $("conflict-reapply").focus();
  }
}
