// Long plans on the panel: finished steps (completed, cancelled) fold behind one
// "N completed steps" toggle once the plan has more steps than the list's
// data-fold-after (templates/_steps.html renders the same fold first). Pure, for
// tests/js/panel_fold.test.mjs; panel.js applies it to the page.

export const FINISHED = new Set(["completed", "cancelled"]);

export function isFinished(step) {
  return FINISHED.has(step.status);
}

// What the list shows for `todos`: whether it is long (the "jump to current" control
// shows then), whether it folds (long, with finished steps), the toggle's words, and
// the step in progress to jump to (the first, when several are).
export function foldPlan(todos, foldAfter) {
  let completed = 0;
  let cancelled = 0;
  let current = null;
  for (const step of todos) {
    if (step.status === "completed") completed += 1;
    else if (step.status === "cancelled") cancelled += 1;
    else if (step.status === "in_progress" && current === null) current = step.id;
  }
  const long = todos.length > foldAfter;
  const finished = completed + cancelled;
  return {
    long,
    folds: long && finished > 0,
    finished,
    label: foldLabel(completed, cancelled),
    current,
  };
}

// "9 completed steps", "1 cancelled step", "9 completed or cancelled steps" (as _step_fold.html says it).
export function foldLabel(completed, cancelled) {
  const n = completed + cancelled;
  const kind = !cancelled ? "completed" : !completed ? "cancelled" : "completed or cancelled";
  return `${n} ${kind} step${n === 1 ? "" : "s"}`;
}

// Whether the finished steps are hidden: the person's choice once they made one
// (kept across live updates and replays), folded until then.
export function foldedNow(choice) {
  return choice === null ? true : !choice;
}
