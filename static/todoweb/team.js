// A project's settings pages (templates/team/): they work without this script, which
// only adds a Copy button beside what is shown once (a new token, a webhook's secret).

for (const button of document.querySelectorAll("button.copy[data-copy]")) {
  const field = document.getElementById(button.dataset.copy);
  if (!field || !navigator.clipboard) continue;
  button.hidden = false;
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(field.value);
      button.textContent = "Copied";
    } catch {
      field.select();
      button.textContent = "Press Ctrl+C to copy";
    }
  });
}

for (const field of document.querySelectorAll("input.secret")) {
  field.addEventListener("focus", () => field.select());
}
