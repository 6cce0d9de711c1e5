// huiyi web: the little script the page needs. No framework, no build step, nothing from
// outside this server. It sends changes with the CSRF token in a header, swaps the memory
// panel in place, and polls for changes made elsewhere (the model, an editor).
"use strict";
(function () {
  const csrf = document.querySelector('meta[name="csrf"]').content;
  const POLL_MS = 3000;

  function post(form) {
    return fetch(form.action, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "X-CSRF-Token": csrf,
        "Content-Type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams(new FormData(form)),
    });
  }

  function swapPanel(html) {
    const panel = document.getElementById("memory-panel");
    if (!panel) return;
    const box = document.createElement("div");
    box.innerHTML = html; // our own server's escaped HTML
    const fresh = box.querySelector("#memory-panel");
    if (fresh) {
      panel.replaceWith(fresh);
    } else {
      panel.prepend(...box.childNodes);
    }
  }

  document.addEventListener("submit", async (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || form.method.toLowerCase() !== "post") return;
    event.preventDefault();
    const button = form.querySelector("button[type=submit]");
    if (button) button.disabled = true;
    try {
      const response = await post(form);
      if (form.hasAttribute("data-reload")) {
        location.reload();
        return;
      }
      swapPanel(await response.text());
      const note = document.querySelector("#memory-panel .message");
      if (note) note.focus();
    } finally {
      if (button) button.disabled = false;
    }
  });

  // -- memory: show changes made elsewhere without a reload ------------------------------
  function editing(panel) {
    const active = document.activeElement;
    return (
      panel.querySelector("details.edit[open], details.delete[open]") !== null ||
      (active !== null && panel.contains(active) && active.tagName === "TEXTAREA" && active.value !== "")
    );
  }

  async function pollMemory() {
    const panel = document.getElementById("memory-panel");
    if (!panel || editing(panel)) return;
    const ws = encodeURIComponent(panel.dataset.ws || "");
    const response = await fetch(`/memory/version?ws=${ws}`, { credentials: "same-origin" });
    if (!response.ok) return;
    const { version } = await response.json();
    if (version === panel.dataset.version) return;
    const query = new URLSearchParams(location.search).get("q") || "";
    const part = await fetch(`/memory/panel?ws=${ws}&q=${encodeURIComponent(query)}`, {
      credentials: "same-origin",
    });
    if (part.ok && !editing(panel)) swapPanel(await part.text());
  }

  // -- status: move the coverage bar while embedding runs --------------------------------
  async function pollStatus() {
    const coverage = document.getElementById("coverage");
    if (!coverage || coverage.dataset.running !== "1") return;
    const response = await fetch("/status/part", { credentials: "same-origin" });
    if (!response.ok) return;
    const box = document.createElement("div");
    box.innerHTML = await response.text();
    const fresh = box.querySelector("#coverage");
    if (fresh) coverage.replaceWith(fresh);
  }

  setInterval(() => {
    pollMemory().catch(() => {});
    pollStatus().catch(() => {});
  }, POLL_MS);

  // the reader opened at a hit: bring it into view
  const target = document.querySelector(".events .target");
  if (target) target.scrollIntoView({ block: "center" });
})();
