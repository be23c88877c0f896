// The moderation console's enhancements: keyboard shortcuts, claiming the task in view and
// in-place updates. Every page works without this file (plain forms, POST then redirect);
// here the same forms are posted with fetch() and "Accept: application/json".
// No dependencies, no inline script: loaded with `defer` from static/.
"use strict";

(() => {
  const body = document.body;
  const msg = (name) => body.dataset[name] || "";
  const csrfToken = () => document.querySelector("input[name=csrfmiddlewaretoken]")?.value || "";

  // --- small helpers ------------------------------------------------------------------------

  const flashBox = document.querySelector(".flash");
  let flashTimer = null;
  function flash(text, isError = false) {
    if (!flashBox) return;
    flashBox.textContent = text;
    flashBox.classList.toggle("error", isError);
    flashBox.hidden = false;
    clearTimeout(flashTimer);
    flashTimer = setTimeout(() => { flashBox.hidden = true; }, isError ? 8000 : 4000);
  }

  async function post(url, fields = []) {
    const form = new FormData();
    form.append("csrfmiddlewaretoken", csrfToken());
    for (const [name, value] of fields) form.append(name, value);
    try {
      const response = await fetch(url, {
        method: "POST",
        body: form,
        credentials: "same-origin",
        headers: { Accept: "application/json", "X-CSRFToken": csrfToken() },
      });
      let data = null;
      try { data = await response.json(); } catch { /* not JSON: an error page */ }
      return { ok: response.ok, status: response.status, data };
    } catch {
      return { ok: false, status: 0, data: null };
    }
  }

  function errorText(result) {
    if (result.status === 0) return msg("msgOffline");
    return result.data?.error?.message || `${msg("msgFailed")} ${result.status}`;
  }

  function typing(event) {
    const t = event.target;
    return t instanceof HTMLElement && (t.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(t.tagName));
  }

  // Site pickers submit themselves; their button stays for pages without script.
  for (const form of document.querySelectorAll("form[data-autosubmit]")) {
    form.querySelector("select")?.addEventListener("change", () => form.submit());
    form.querySelector("button")?.setAttribute("hidden", "");
  }

  // --- claims -------------------------------------------------------------------------------

  function showClaim(el, claimedBy, mine) {
    const label = el.querySelector("[data-claim]");
    const blocked = Boolean(claimedBy) && !mine;
    el.classList.toggle("is-claimed", blocked);
    if (label) {
      label.textContent = mine ? msg("msgYours") : claimedBy ? `${msg("msgClaimedBy")} ${claimedBy.name}` : "";
    }
    for (const button of el.querySelectorAll("button[data-action], .actions button[name=do]")) {
      button.disabled = blocked;
    }
  }

  // Requests about one task run one after another (a quick j, k, j must not let a release
  // overtake the claim after it, nor a claim arrive after the decision).
  const pending = new WeakMap();
  function inTurn(el, job) {
    const next = (pending.get(el) || Promise.resolve()).then(job, job);
    pending.set(el, next);
    return next;
  }

  function claim(el) {
    if (!el || el.dataset.state !== "open") return Promise.resolve();
    return inTurn(el, async () => {
      if (el.dataset.state !== "open") return;
      const result = await post(el.dataset.claimUrl);
      if (result.ok) {
        showClaim(el, result.data?.claimed_by, true);
        el.querySelector("[data-claim-form]")?.setAttribute("hidden", "");
      } else if (result.status === 403 && result.data?.claimed_by) {
        showClaim(el, result.data.claimed_by, false);
      }
    });
  }

  function release(el) {
    if (!el || el.dataset.state !== "open" || el.classList.contains("is-claimed")) return;
    showClaim(el, null, false);
    inTurn(el, () => (el.dataset.state === "open" ? post(el.dataset.releaseUrl) : null));
  }

  // --- the queue ----------------------------------------------------------------------------

  const queueForm = document.querySelector("form[data-queue]");
  const rows = () => [...document.querySelectorAll(".tasks > .task")];
  let current = null;

  function select(row, { claimIt = true } = {}) {
    if (!row || row === current) return;
    const previous = current;
    previous?.classList.remove("is-selected");
    previous?.removeAttribute("aria-current");
    current = row;
    row.classList.add("is-selected");
    row.setAttribute("aria-current", "true");
    row.focus({ preventScroll: true });
    row.scrollIntoView({ block: "nearest", behavior: "smooth" });
    if (claimIt) {
      release(previous);
      claim(row);
    }
  }

  function move(step) {
    const list = rows();
    if (!list.length) return;
    const index = current ? list.indexOf(current) : -1;
    const next = index < 0 ? list[step > 0 ? 0 : list.length - 1] : list[Math.min(list.length - 1, Math.max(0, index + step))];
    select(next);
  }

  function checked() {
    return rows().filter((row) => row.querySelector("input[name=comment]")?.checked);
  }

  function markDone(row, result) {
    row.classList.add("is-done");
    row.classList.remove("is-claimed");
    row.dataset.state = "done";
    const box = row.querySelector("input[name=comment]");
    if (box) box.checked = false;
    const badge = row.querySelector(".comment-head .badge[class*='st-']");
    if (badge && result.status) {
      badge.className = `badge st-${result.status}`;
      badge.textContent = result.status;
    }
    const label = row.querySelector("[data-claim]");
    if (label) label.textContent = "";
  }

  async function act(targets, action, reason = "") {
    targets = targets.filter((row) => row.dataset.state === "open" || targets.length === 1);
    if (!targets.length) return;
    const fields = [["action", action], ["reason", reason], ["next", location.pathname + location.search]];
    for (const row of targets) fields.push(["comment", row.dataset.comment]);
    targets.forEach((row) => row.classList.add("is-busy"));
    await Promise.all(targets.map((row) => pending.get(row)));
    const result = await post(queueForm.getAttribute("action"), fields);
    targets.forEach((row) => row.classList.remove("is-busy"));
    const outcomes = result.data?.results;
    if (!outcomes) {
      flash(errorText(result), true);
      return;
    }
    const byComment = new Map(targets.map((row) => [row.dataset.comment, row]));
    const errors = [];
    let done = 0;
    for (const outcome of outcomes) {
      const row = byComment.get(String(outcome.comment_id));
      if (outcome.ok) {
        done += 1;
        if (row) markDone(row, outcome);
      } else {
        errors.push(`#${outcome.comment_id}: ${outcome.error}`);
        if (row && outcome.code === "permission_denied") claim(row); // shows who holds it
      }
    }
    if (errors.length) flash(errors.join(" · "), true);
    else if (done) flash(result.data.message || "");
    // Go on with the next open task after the one decided.
    if (current && current.dataset.state === "done") {
      const list = rows();
      const after = list.slice(list.indexOf(current) + 1).find((row) => row.dataset.state === "open");
      if (after) select(after);
    }
  }

  if (queueForm) {
    const selectAll = queueForm.querySelector("[data-select-all]");
    selectAll?.addEventListener("change", () => {
      for (const box of queueForm.querySelectorAll("input[name=comment]")) box.checked = selectAll.checked;
    });

    queueForm.addEventListener("submit", (event) => {
      const submitter = event.submitter;
      if (!submitter) return;
      event.preventDefault();
      const reason = queueForm.querySelector("input[name=reason]")?.value || "";
      if (submitter.name === "do") {
        const [action] = submitter.value.split(":");
        const row = submitter.closest(".task");
        select(row, { claimIt: false });
        act([row], action, reason);
      } else {
        const targets = checked();
        if (!targets.length) {
          flash(queueForm.dataset.msgNoneSelected || "0", true);
          return;
        }
        act(targets, queueForm.querySelector("select[name=action]").value, reason);
      }
    });

    queueForm.addEventListener("click", (event) => {
      const row = event.target.closest(".task");
      if (row && !event.target.closest("a, button, input, label")) select(row);
    });
  }

  // --- a task in context --------------------------------------------------------------------

  const detail = document.querySelector("[data-task-detail]");
  if (detail && !detail.classList.contains("is-claimed")) claim(detail);

  // --- keyboard -----------------------------------------------------------------------------

  const help = document.getElementById("shortcuts");

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event)) return;
    if (event.key === "?") {
      event.preventDefault();
      if (help?.open) help.close();
      else help?.showModal();
      return;
    }
    if (help?.open) return;
    const key = event.key;
    if (queueForm) {
      if (key === "j" || key === "k") {
        event.preventDefault();
        move(key === "j" ? 1 : -1);
      } else if (key === "x" && current) {
        event.preventDefault();
        const box = current.querySelector("input[name=comment]");
        if (box) box.checked = !box.checked;
      } else if ((key === "a" || key === "r") && (current || checked().length)) {
        event.preventDefault();
        const action = key === "a" ? "approve" : "reject";
        const targets = checked().length ? checked() : [current];
        act(targets, action, queueForm.querySelector("input[name=reason]")?.value || "");
      } else if ((key === "o" || (key === "Enter" && event.target === current)) && current) {
        event.preventDefault();
        location.assign(current.dataset.url);
      }
    } else if (detail && (key === "a" || key === "r")) {
      const button = detail.querySelector(`button[data-action=${key === "a" ? "approve" : "reject"}]`);
      if (button && !button.disabled) {
        event.preventDefault();
        button.click();
      }
    }
  });
})();
