// Run and edit the page's Python blocks in the browser, offline.
//
// The build (tools/site/run_in_page.py) marks every Python block with data-run-block (its
// index on the page) and, where the browser cannot run it, data-run-needs (why not).
// A page's blocks share one namespace and run in page order, as in the tests: Run on a
// block first runs the earlier blocks that have not run, or are out of date. Editing a
// block, or running one again, makes every later block that has run out of date ("stale"):
// its output may no longer follow from the blocks above. Python runs in a Web Worker
// (run-worker.js), created on the first Run: a plain page view downloads nothing more
// than this script. Stop terminates the worker; the next Run starts a fresh one.
(function () {
  "use strict";
  const script = document.currentScript;
  const root = new URL("..", script.src);  // the site's root: this file is javascripts/…
  const base = new URL("assets/pyodide/", root).href;
  const help = new URL("#run-the-code-in-your-browser", root).href;  // the home page explains Run
  const INDENT = "    ";
  const course = { worker: null, pending: new Map(), nextId: 1, page: null, statusLog: [],
                   outputMatches, statusListeners: new Set(), compute };
  window.runInPage = course;

  // A live figure (live-figures.js): the package's attention.interactive computes it from
  // the controls' values, in the same worker as the blocks, outside every page's namespace.
  function compute(figure, values) {
    return send({ type: "figure", figure, values: JSON.stringify(values) });
  }

  function send(message, onOutput) {
    if (!course.worker) {
      course.worker = new Worker(new URL("javascripts/run-worker.js", root));
      course.worker.onmessage = (event) => {
        const data = event.data;
        if (data.type === "status") return announce(data.text);
        const waiting = course.pending.get(data.id);
        if (data.type === "output") return waiting && waiting.onOutput(data.stream, data.text);
        course.pending.delete(data.id);
        if (data.loadFailed) forgetWorker();  // a failed load is not kept: Run tries again
        if (waiting) waiting.resolve(data);
      };
    }
    const id = course.nextId++;
    return new Promise((resolve) => {
      course.pending.set(id, { resolve, onOutput: onOutput || (() => {}) });
      // A page that reads chapter 7's checkpoint is marked by the build: only there does
      // the worker fetch it (tools/site/run_in_page.py, needs_checkpoint).
      const checkpoint = document.querySelector("[data-run-checkpoint]") !== null;
      course.worker.postMessage({ ...message, id, base, checkpoint });
    });
  }

  function forgetWorker() {
    if (course.worker) course.worker.terminate();
    course.worker = null;
  }

  function stop() {
    forgetWorker();
    for (const waiting of course.pending.values()) {
      waiting.resolve({ ok: false, error: "Stopped: Python was restarted, and every " +
                                          "variable of the page forgotten." });
    }
    course.pending.clear();
    if (course.page) course.page.blocks.forEach((block) => block.runnable && setStatus(block, "idle"));
  }

  function announce(text) {
    course.statusLog.push(text);
    course.statusListeners.forEach((listener) => listener(text));
    const page = course.page;
    if (page && page.running) {
      page.running.loading = text;
      page.running.label.textContent = text;
    }
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

  const LABELS = { idle: "", running: "Running…", ran: "Ran in your browser",
                   stale: "Out of date: an earlier block changed or ran again; run again",
                   failed: "Failed" };

  function setStatus(block, status, detail) {
    block.status = status;
    block.el.dataset.runStatus = status;
    block.label.textContent = LABELS[status] + (detail || "");
  }

  // --- Comparing with the page's Output (tools/pagecheck/outputs.py, the same rules) ---

  const NUMBER = String.raw`[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?`;
  const TOKEN = new RegExp(String.raw`\\~|~(` + NUMBER + ")", "g");
  const DEFAULT_BAND = 2;  // a fence's band="..." arrives as data-run-band

  function escape(text) {
    return text.replace(/[.*+?^${}()|[\]\\\/-]/g, "\\$&");
  }

  function normalise(text) {
    const lines = text.split("\n").map((line) => line.replace(/\s+$/, ""));
    while (lines.length && !lines[lines.length - 1]) lines.pop();
    while (lines.length && !lines[0]) lines.shift();
    return lines;
  }

  // The values a printed number rounds from: half a unit of its last digit either way.
  function roundingRange(text) {
    const [mantissa, exponent = "0"] = text.toLowerCase().split("e");
    const decimals = (mantissa.split(".")[1] || "").length;
    const half = 0.5 * 10 ** (Number(exponent) - decimals);
    return [Number(text) - half, Number(text) + half];
  }

  // A printed number matches ~shown when its range meets the shown range widened by the
  // band's factor, away from zero (never across it); band Infinity: any number.
  function withinBand(shown, printed, band) {
    if (band === Infinity) return true;
    let [low, high] = roundingRange(shown);
    low = low > 0 ? low / band : low * band;
    high = high > 0 ? high * band : high / band;
    const [pLow, pHigh] = roundingRange(printed);
    return pLow <= high && pHigh >= low;
  }

  function lineMatches(expected, actual, band = DEFAULT_BAND) {
    if (!expected.includes("~")) return expected === actual;
    let pattern = "", at = 0;
    const shown = [];
    for (const match of expected.matchAll(TOKEN)) {
      const literal = expected.slice(at, match.index);
      if (match[0] === "\\~") {
        pattern += escape(literal) + "~";
      } else {  // one whole number; the spaces before it are a column's padding
        const padded = literal.replace(/ +$/, "");
        pattern += escape(padded) + (padded !== literal ? " +" : "");
        pattern += String.raw`(?<![\d.])(` + NUMBER + String.raw`)(?![\d.])`;
        shown.push(match[1]);
      }
      at = match.index + match[0].length;
    }
    const found = new RegExp("^" + pattern + escape(expected.slice(at)) + "$").exec(actual);
    return found !== null && shown.every((number, i) => withinBand(number, found[i + 1], band));
  }

  function outputMatches(expected, actual, band = DEFAULT_BAND) {
    const exp = normalise(expected), act = normalise(actual);
    return exp.length === act.length &&
           exp.every((line, i) => lineMatches(line, act[i], band));
  }

  // A line diff (longest common subsequence; outputs are short): [" ", "-", "+"] per line.
  function lineDiff(expected, actual, band = DEFAULT_BAND) {
    const a = normalise(expected), b = normalise(actual);
    const table = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
    for (let i = a.length - 1; i >= 0; i--) {
      for (let j = b.length - 1; j >= 0; j--) {
        table[i][j] = lineMatches(a[i], b[j], band) ? table[i + 1][j + 1] + 1
                                              : Math.max(table[i + 1][j], table[i][j + 1]);
      }
    }
    const out = [];
    let i = 0, j = 0;
    while (i < a.length || j < b.length) {
      if (i < a.length && j < b.length && lineMatches(a[i], b[j], band)) {
        out.push([" ", b[j]]); i++; j++;
      } else if (i < a.length && (j === b.length || table[i + 1][j] >= table[i][j + 1])) {
        out.push(["-", a[i++]]);
      } else {
        out.push(["+", b[j++]]);
      }
    }
    return out;
  }

  // --- Output ---

  function clearOutput(block) {
    block.printed = "";
    block.stderr = "";
    block.el.runPrinted = "";
    block.output.hidden = true;
    block.output.dataset.shown = "";
    block.title.textContent = "Output in your browser";
    block.out.replaceChildren();
  }

  function line(text, className) {
    const span = document.createElement("span");
    span.className = className;
    span.textContent = text;
    return span;
  }

  function verdictClass(text) {
    if (text.startsWith("✓ Correct")) return "run-pass";
    if (text.startsWith("✗ Not yet")) return "run-fail";
    return null;
  }

  // Printed text, its ✓/✗ verdict lines marked for the stylesheet.
  function appendText(block, text, className) {
    for (const piece of text.split(/(?<=\n)/)) {
      const verdict = className ? null : verdictClass(piece);
      const kind = className || verdict;
      block.out.append(kind ? line(piece, kind) : document.createTextNode(piece));
    }
  }

  function onOutput(block, stream, text) {
    if (stream === "stdout") block.printed += text;
    else block.stderr += text;
    block.el.runPrinted = block.printed;
    block.output.hidden = false;
    block.output.dataset.shown = "text";
    appendText(block, text, stream === "stderr" ? "run-stderr" : null);
  }

  function hasVerdict(text) {
    return text.split("\n").some((piece) => verdictClass(piece));
  }

  // What the reader sees once a block has run: nothing when it printed nothing; a short
  // "same as the page" instead of a second copy of the page's Output; a line diff when it
  // differs (a self-check's verdict is always shown as it is: it is the reader's result);
  // a note when output was cut.
  function finish(block, result) {
    const expected = block.expected;
    const printed = block.printed;
    const cut = result.limit && result.printed > result.limit;
    // Compared with the page only when whole: a cut output is shown as it came.
    // A block the page gives the reader to change ("Your turn") shows its output plainly.
    const comparable = result.ok && !block.stderr && expected !== null && printed.trim() &&
                       !cut && !hasVerdict(printed) && !("runYours" in block.el.dataset);
    if (comparable && outputMatches(expected, printed, block.band)) {
      block.out.replaceChildren(line("Printed the same as the page's Output above.",
                                     "run-same"));
      block.output.dataset.shown = "same";
    } else if (comparable) {
      block.title.textContent = "Output in your browser: differs from the page " +
                                "(− the page's line, + your browser's)";
      block.out.replaceChildren(...lineDiff(expected, printed, block.band).map(([sign, text]) =>
        line(`${sign} ${text}\n`, { " ": "run-diff-same", "-": "run-diff-page",
                                    "+": "run-diff-yours" }[sign])));
      block.output.dataset.shown = "diff";
    }
    if (result.error) {
      block.output.hidden = false;
      block.output.dataset.shown ||= "text";
      appendText(block, (block.out.textContent.endsWith("\n") || !block.out.textContent
                         ? "" : "\n") + result.error + "\n", "run-stderr");
    }
    if (cut) {
      block.out.append(line(`[Output cut: the block printed ${result.printed.toLocaleString("en")} ` +
                            `characters; the first ${result.limit.toLocaleString("en")} are shown.]\n`,
                            "run-note"));
    }
    if (!printed && !block.stderr && !result.error) block.output.hidden = true;
  }

  async function runBlock(page, block) {
    page.running = block;
    block.loading = null;
    setStatus(block, "running");
    clearOutput(block);
    block.stopButton.hidden = false;
    const started = performance.now();
    const seconds = () => ((performance.now() - started) / 1000).toFixed(1);
    const clock = setInterval(() => {
      if (!block.loading) block.label.textContent = `Running… ${seconds()} s`;
    }, 250);
    const result = await send({ type: "run", page: page.key, code: codeOf(block),
                                name: block.name },
                              (stream, text) => onOutput(block, stream, text));
    clearInterval(clock);
    block.el.dataset.runSeconds = ((performance.now() - started) / 1000).toFixed(2);
    block.stopButton.hidden = true;
    page.running = null;
    if (course.page !== page) return false;  // the reader navigated away meanwhile
    finish(block, result);
    if (result.ok && block.el.dataset.exercise) reportVerdict(block);
    const printedNothing = result.ok && !block.printed && !block.stderr ? ", printed nothing" : "";
    setStatus(block, result.ok ? "ran" : "failed", result.ok ? ` in ${seconds()} s${printedNothing}` : "");
    // What ran again may have changed what every later block used.
    for (const later of page.blocks) {
      if (later.runnable && later.index > block.index && later.status !== "idle") {
        setStatus(later, "stale");
      }
    }
    return result.ok;
  }

  // An exercise's check (tools/site/practice_pages.py marks it data-exercise): its last
  // verdict line says whether the reader's answer passed; drills.js keeps the solved ones.
  function reportVerdict(block) {
    const verdicts = block.printed.split("\n").filter((piece) => verdictClass(piece));
    if (!verdicts.length) return;
    document.dispatchEvent(new CustomEvent("exercise-verdict", { detail: {
      exercise: block.el.dataset.exercise,
      solved: verdictClass(verdicts[verdicts.length - 1]) === "run-pass" } }));
  }

  function codeOf(block) {
    return block.code.textContent;
  }

  async function runUpTo(page, index) {
    if (page.running) return;
    const target = page.blocks[index];
    // Earlier blocks that have not run or are out of date, in order (each run makes the
    // ones after it out of date); a failed one is not retried (the reader runs it again
    // by hand once it is fixed).
    for (;;) {
      const block = page.blocks.find((b) => b.runnable && b.index < index &&
                                           (b.status === "idle" || b.status === "stale")) || target;
      const ok = await runBlock(page, block);
      if (!ok || block === target || course.page !== page) return;
    }
  }

  function markStale(page, index) {
    for (const block of page.blocks) {
      if (block.runnable && block.index >= index && block.status !== "idle") setStatus(block, "stale");
    }
  }

  // --- The editor: Tab and Shift-Tab indent and dedent, Enter keeps the indentation,
  // Escape leaves (focus goes back to Edit, so the keyboard is never trapped). ---

  function selectionOffsets(el) {
    const selection = window.getSelection();
    if (!selection.rangeCount) return [0, 0];
    const range = selection.getRangeAt(0);
    const offset = (node, at) => {
      const r = document.createRange();
      r.selectNodeContents(el);
      r.setEnd(node, at);
      return r.toString().length;
    };
    return [offset(range.startContainer, range.startOffset), offset(range.endContainer, range.endOffset)];
  }

  function selectOffsets(el, start, end) {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    let seen = 0, node, startSet = false;
    while ((node = walker.nextNode())) {
      const length = node.textContent.length;
      if (!startSet && start <= seen + length) { range.setStart(node, start - seen); startSet = true; }
      if (startSet && end <= seen + length) { range.setEnd(node, end - seen); break; }
      seen += length;
    }
    if (!startSet) { range.selectNodeContents(el); range.collapse(false); }
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  // A last line left empty shows only if another newline follows it (in <pre>, a final
  // newline ends a line, it does not start one): without it the caret goes up a line. So
  // code that ends in a newline is shown with one more, which is not part of the code.
  function shown(code) {
    return code.endsWith("\n") ? code + "\n" : code;
  }

  function unshown(text) {
    return text.endsWith("\n\n") ? text.slice(0, -1) : text;
  }

  // Replace characters start..end of the block's code with text, the caret after it (or
  // the new text selected), and tell the page the block changed.
  function replace(el, start, end, text, select) {
    const full = unshown(el.textContent); // the newline added for the caret comes off first
    const changed = full.slice(0, start) + text + full.slice(end);
    el.textContent = shown(changed);
    if (select) selectOffsets(el, select[0], select[1]);
    else selectOffsets(el, start + text.length, start + text.length);
    el.dispatchEvent(new Event("input", { bubbles: true }));
  }

  // Indent (or dedent) every line the selection touches, keeping it selected.
  function shiftLines(el, dedent) {
    const text = el.textContent;
    const [start, end] = selectionOffsets(el);
    const first = text.lastIndexOf("\n", start - 1) + 1;
    const last = text.indexOf("\n", end) === -1 ? text.length : text.indexOf("\n", end);
    const lines = text.slice(first, last).split("\n");
    const cuts = lines.map((l) => (dedent ? l.match(/^ {0,4}/)[0].length : 0));
    const replaced = lines.map((l, i) => (dedent ? l.slice(cuts[i]) : INDENT + l)).join("\n");
    const moved = dedent ? -cuts[0] : INDENT.length;
    replace(el, first, last, replaced,
            [Math.max(first, start + moved), end + replaced.length - (last - first)]);
  }

  function onEditorKey(event, block, editButton) {
    const el = block.code;
    if (event.key === "Escape") {
      event.preventDefault();
      toggleEdit(block, editButton);
      editButton.focus();
    } else if (event.key === "Tab") {
      event.preventDefault();
      const [start, end] = selectionOffsets(el);
      const multiline = el.textContent.slice(start, end).includes("\n");
      if (event.shiftKey || multiline) shiftLines(el, event.shiftKey);
      else replace(el, start, end, INDENT);
    } else if (event.key === "Enter" && !event.shiftKey && !event.ctrlKey && !event.metaKey) {
      event.preventDefault();
      const [start, end] = selectionOffsets(el);
      const text = el.textContent;
      const current = text.slice(text.lastIndexOf("\n", start - 1) + 1, start);
      const indent = current.match(/^ */)[0] + (/:\s*$/.test(current) ? INDENT : "");
      replace(el, start, end, "\n" + indent);
    }
  }

  function toggleEdit(block, editButton) {
    const editing = block.code.getAttribute("contenteditable") === "plaintext-only";
    if (editing) {
      block.code.removeAttribute("contenteditable");
      block.code.removeAttribute("role");
      editButton.setAttribute("aria-pressed", "false");
    } else {
      block.code.setAttribute("contenteditable", "plaintext-only");
      block.code.setAttribute("spellcheck", "false");
      block.code.setAttribute("role", "textbox");
      block.code.setAttribute("aria-multiline", "true");
      block.code.setAttribute("aria-label", "Python code: Tab indents, Shift+Tab dedents, " +
                                            "Escape leaves the editor");
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
      clearOutput(block);
    }
  }

  // The page's own (checked) Output block right after a block's Run bar, if it has one.
  function checkedOutput(bar) {
    const next = bar.nextElementSibling;
    const checked = next && next.matches("div.highlight") &&
      next.querySelector(":scope > .filename")?.textContent === "Output";
    return checked ? next : null;
  }

  // The first Run bar of a page says how many blocks run here and links to how Run works.
  function intro(page) {
    const runnable = page.blocks.filter((b) => b.runnable).length;
    const note = document.createElement("p");
    note.className = "run-intro";
    const link = document.createElement("a");
    link.href = help;
    link.textContent = "How Run works";
    note.append(`${runnable} of ${page.blocks.length} Python blocks on this page run in ` +
                "your browser (the others need PyTorch, Transformers or Matplotlib, or take " +
                "too long there). ", link);
    return note;
  }

  // What a traceback calls each block: a name the reader can find on the page, the
  // section's heading and the block's place in it (<block 2 under "5.2 Queries in chunks">),
  // where a number counted over the whole page would be shown nowhere.
  function nameBlocks(els) {
    const headings = [...document.querySelectorAll("article :is(h1, h2, h3, h4)")];
    const counts = new Map();
    return els.map((el) => {
      const heading = headings.filter((h) =>
        h.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING).pop();
      const n = (counts.get(heading) || 0) + 1;
      counts.set(heading, n);
      if (!heading) return `<block ${n}>`;
      const title = heading.cloneNode(true);
      title.querySelectorAll(".headerlink").forEach((link) => link.remove());
      return `<block ${n} under "${title.textContent.trim()}">`;
    });
  }

  function decorate() {
    const els = [...document.querySelectorAll("div.language-python[data-run-block]")];
    if (course.page && course.page.running) stop();
    course.page = null;
    if (!els.length) return;
    const page = { key: location.pathname, blocks: [], running: null };
    course.page = page;
    if (course.worker) send({ type: "reset", page: page.key });  // a fresh visit, a fresh namespace
    const names = nameBlocks(els);
    for (const [at, el] of els.entries()) {
      const index = Number(el.dataset.runBlock);
      const code = el.querySelector("code");
      const block = { el, index, code, original: code.innerHTML, status: "idle",
                      runnable: !el.dataset.runNeeds, expected: null, name: names[at],
                      band: el.dataset.runBand === "any" ? Infinity
                        : Number(el.dataset.runBand || DEFAULT_BAND) };
      page.blocks.push(block);
      const bar = document.createElement("div");
      bar.className = "run-bar";
      bar.dataset.runBar = index;
      block.label = document.createElement("span");
      block.label.className = "run-status";
      block.label.setAttribute("aria-live", "polite");
      el.after(bar);
      if (!block.runnable) {
        const note = document.createElement("span");
        note.className = "run-note";
        note.textContent = `Not run in the browser (${el.dataset.runNeeds}); ` +
                           "its output was checked by the tests.";
        bar.append(note);
        continue;
      }
      const editButton = button("Edit", "Edit this block in place", () => toggleEdit(block, editButton));
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
      block.output.innerHTML = '<span class="filename"></span><pre><code></code></pre>';
      block.title = block.output.querySelector(".filename");
      block.out = block.output.querySelector("code");
      block.output.setAttribute("role", "status");
      clearOutput(block);
      code.addEventListener("input", () => markStale(page, index));
      code.addEventListener("keydown", (event) => {
        if (code.getAttribute("contenteditable")) onEditorKey(event, block, editButton);
      });
      // Under the block, after the page's own (checked) Output block when it has one.
      const checked = checkedOutput(bar);
      if (checked) block.expected = checked.querySelector("code").textContent;
      (checked || bar).after(block.output);
    }
    const first = page.blocks.find((b) => b.runnable);
    if (first) first.el.nextElementSibling.prepend(intro(page));
  }

  if (window.document$) window.document$.subscribe(decorate);  // Material: every page view
  else document.addEventListener("DOMContentLoaded", decorate);
})();
