// A project's settings pages (templates/team/): they work without this script, which
// adds a Copy button beside what is shown once (a new token, a webhook's secret) and
// keeps the webhooks' delivery log current while a delivery waits for its first try.

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

// The webhooks page: while some delivery has not been tried yet (a test event just
// sent, an event just made), read the page again every few seconds and put its
// endpoints list (rendered and escaped by the server) in place of this one; stop once
// every delivery has been tried, or after a few minutes.
const POLL_MS = 2000;
const POLL_FOR_MS = 3 * 60 * 1000;

function untried(root) {
  return root.querySelector(".delivery.status-pending[data-attempts='0']") !== null;
}

async function followDeliveries(list) {
  const started = Date.now();
  while (untried(list) && Date.now() - started < POLL_FOR_MS) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    if (document.hidden) continue;
    let text;
    try {
      const response = await fetch(location.pathname, { headers: { Accept: "text/html" } });
      if (!response.ok) return;
      text = await response.text();
    } catch {
      continue; // offline for a moment: try again
    }
    const fresh = new DOMParser().parseFromString(text, "text/html").getElementById(list.id);
    if (!fresh) return;
    // Each log stays as open or closed as the person left it.
    const logs = new Map([...list.querySelectorAll("details.log")].map((d) => [d.closest("[data-id]").dataset.id, d.open]));
    list.replaceChildren(...fresh.childNodes);
    for (const details of list.querySelectorAll("details.log")) {
      const wasOpen = logs.get(details.closest("[data-id]").dataset.id);
      if (wasOpen !== undefined) details.open = wasOpen;
    }
  }
}

const deliveriesList = document.querySelector("[data-follow-deliveries]");
if (deliveriesList) followDeliveries(deliveriesList);
