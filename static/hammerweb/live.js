// The dashboard's WebSocket (htmx ws extension, ws-connect on the overview). While it is open
// the server pushes the live regions, so their 2 s polls stand down: the poll's trigger filter
// ({% live %} in queues/templatetags/dashboard.py) checks this attribute on <body>. When the
// socket closes the polls resume until the extension reconnects.
document.addEventListener("htmx:wsOpen", () => document.body.setAttribute("data-ws-live", ""));
for (const name of ["htmx:wsClose", "htmx:wsError"]) {
  document.addEventListener(name, () => document.body.removeAttribute("data-ws-live"));
}

// The operator's pause of the live updates (#live-toggle in base.html), kept in localStorage
// so that it holds across pages: while paused, <body> has data-live-paused, which stops the
// polls ({% live %}'s trigger filter checks it) and drops the pushed updates of the socket.
// Resuming redraws every live region at once (their `refresh` trigger).
const PAUSE_KEY = "hammerweb-live-paused";

function showLivePause(paused) {
  document.body.toggleAttribute("data-live-paused", paused);
  const button = document.getElementById("live-toggle");
  if (button) {
    button.setAttribute("aria-pressed", String(paused));
    button.textContent = paused ? "Resume live" : "Pause live";
  }
}

function storedPause() {
  try {
    return localStorage.getItem(PAUSE_KEY) === "1";
  } catch {
    return false;  // storage refused (private mode): the pause lasts for this page
  }
}

document.addEventListener("DOMContentLoaded", () => {
  showLivePause(storedPause());
  const button = document.getElementById("live-toggle");
  if (!button) return;
  button.addEventListener("click", () => {
    const paused = !document.body.hasAttribute("data-live-paused");
    try {
      localStorage.setItem(PAUSE_KEY, paused ? "1" : "0");
    } catch {}
    showLivePause(paused);
    if (!paused && window.htmx) htmx.trigger(document.body, "refresh");
  });
});
document.addEventListener("htmx:wsBeforeMessage", (event) => {
  if (document.body.hasAttribute("data-live-paused")) event.preventDefault();
});
