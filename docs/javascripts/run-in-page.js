// Run and edit the page's Python blocks in the browser, offline.
//
// The build (tools/run_in_page.py) marks every Python block with data-run-block (its
// index on the page) and, where the browser cannot run it, data-run-needs (why not).
// A page's blocks share one namespace and run in page order, as in the tests: Run on a
// block first runs the earlier blocks that have not run since the page was opened or
// edited. Editing a block marks it and every later block as stale. Python runs in a Web
// Worker (run-worker.js), created on the first Run: a plain page view downloads nothing
// more than this script. Stop terminates the worker; the next Run starts a fresh one.
(function () {
  "use strict";
  const script = document.currentScript;
  const root = new URL("..", script.src);  // the site's root: this file is javascripts/…
  const base = new URL("assets/pyodide/", root).href;
  const course = { worker: null, pending: new Map(), nextId: 1, page: null };
  window.runInPage = course;

  function send(message) {
    if (!course.worker) {
      course.worker = new Worker(new URL("javascripts/run-worker.js", root));
      course.worker.onmessage = (event) => {
        const data = event.data;
        if (data.type === "status") return announce(data.text);
        const resolve = course.pending.get(data.id);
        course.pending.delete(data.id);
        if (resolve) resolve(data);
      };
    }
    const id = course.nextId++;
    return new Promise((resolve) => {
      course.pending.set(id, resolve);
      course.worker.postMessage({ ...message, id, base });
    });
  }

  function stop() {
    if (course.worker) course.worker.terminate();
    course.worker = null;
    for (const resolve of course.pending.values()) {
      resolve({ ok: false, stdout: "", error: "Stopped: Python was restarted." });
    }
    course.pending.clear();
    if (course.page) course.page.blocks.forEach((block) => setStatus(block, "idle"));
  }

  function announce(text) {
    const page = course.page;
    if (page && page.running) page.running.output.querySelector("code").textContent = text;
  }

  function button(label, title, onClick) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "md-button run-button";
    b.textContent = label;
    b.title = title;
    b.addEventListener("click", onClick);
    return b;
  }

  function setStatus(block, status) {
    block.status = status;
    block.el.dataset.runStatus = status;
    const labels = { idle: "", running: "Running…", ran: "Ran in your browser",
                     stale: "Edited: run again", failed: "Failed" };
    block.label.textContent = labels[status];
  }

  function codeOf(block) {
    return block.code.textContent;
  }

  async function runUpTo(page, index) {
    if (page.running) return;
    // Earlier blocks that have not run, or were edited since; a failed one is not retried
    // (the reader runs it again by hand once it is fixed).
    const todo = page.blocks.filter((b) => b.runnable && b.index < index &&
                                           (b.status === "idle" || b.status === "stale"));
    todo.push(page.blocks[index]);
    for (const block of todo) {
      page.running = block;
      setStatus(block, "running");
      block.output.hidden = false;
      block.stopButton.hidden = false;
      block.output.querySelector("code").textContent = "";
      const started = performance.now();
      const result = await send({ type: "run", page: page.key, code: codeOf(block) });
      block.el.dataset.runSeconds = ((performance.now() - started) / 1000).toFixed(2);
      block.stopButton.hidden = true;
      page.running = null;
      if (course.page !== page) return;  // the reader navigated away meanwhile
      const text = result.stdout + (result.error ? result.error + "\n" : "");
      block.output.querySelector("code").textContent = text;
      setStatus(block, result.ok ? "ran" : "failed");
      if (!result.ok) return;
    }
  }

  function markStale(page, index) {
    for (const block of page.blocks) {
      if (block.runnable && block.index >= index && block.status !== "idle") setStatus(block, "stale");
    }
  }

  function toggleEdit(page, block, editButton) {
    const editing = block.code.getAttribute("contenteditable") === "plaintext-only";
    if (editing) {
      block.code.removeAttribute("contenteditable");
      editButton.setAttribute("aria-pressed", "false");
    } else {
      block.code.setAttribute("contenteditable", "plaintext-only");
      block.code.setAttribute("spellcheck", "false");
      editButton.setAttribute("aria-pressed", "true");
      block.code.focus();
    }
  }

  async function restart(page) {
    if (page.running) stop();
    await send({ type: "reset", page: page.key });
    for (const block of page.blocks) {
      if (!block.runnable) continue;
      setStatus(block, "idle");
      block.output.hidden = true;
    }
  }

  function decorate() {
    const els = [...document.querySelectorAll("div.language-python[data-run-block]")];
    if (course.page && course.page.running) stop();
    course.page = null;
    if (!els.length) return;
    const page = { key: location.pathname, blocks: [], running: null };
    course.page = page;
    if (course.worker) send({ type: "reset", page: page.key });  // a fresh visit, a fresh namespace
    for (const el of els) {
      const index = Number(el.dataset.runBlock);
      const code = el.querySelector("code");
      const block = { el, index, code, original: code.innerHTML, status: "idle",
                      runnable: !el.dataset.runNeeds };
      page.blocks.push(block);
      const bar = document.createElement("div");
      bar.className = "run-bar";
      bar.dataset.runBar = index;
      block.label = document.createElement("span");
      block.label.className = "run-status";
      block.label.setAttribute("aria-live", "polite");
      if (!block.runnable) {
        const note = document.createElement("span");
        note.className = "run-note";
        note.textContent = `Not run in the browser (${el.dataset.runNeeds}); ` +
                           "its output was checked by the tests.";
        bar.append(note);
        el.after(bar);
        continue;
      }
      const editButton = button("Edit", "Edit this block in place", () => toggleEdit(page, block, editButton));
      editButton.setAttribute("aria-pressed", "false");
      block.stopButton = button("Stop", "Stop Python (a runaway loop); the next Run restarts it", stop);
      block.stopButton.hidden = true;
      bar.append(
        button("Run", "Run this block (and the earlier blocks it needs) in your browser",
               () => runUpTo(page, index)),
        editButton,
        button("Restore", "Put back the page's code", () => {
          block.code.innerHTML = block.original;
          markStale(page, index);
        }),
        button("Restart", "Forget every variable of this page and start again", () => restart(page)),
        block.stopButton, block.label);
      block.output = document.createElement("div");
      block.output.className = "highlight run-output";
      block.output.dataset.for = index;
      block.output.hidden = true;
      block.output.innerHTML = '<span class="filename">Output in your browser</span><pre><code></code></pre>';
      block.output.setAttribute("role", "status");
      code.addEventListener("input", () => markStale(page, index));
      el.after(bar);
      // Under the block, after the page's own (checked) Output block when it has one.
      const next = bar.nextElementSibling;
      const checked = next && next.matches("div.highlight") &&
        next.querySelector(":scope > .filename")?.textContent === "Output";
      (checked ? next : bar).after(block.output);
    }
  }

  if (window.document$) window.document$.subscribe(decorate);  // Material: every page view
  else document.addEventListener("DOMContentLoaded", decorate);
})();
