// The reader's progress through the exercises, kept in this browser's local storage.
//
// run-in-page.js announces the verdict of every exercise's check it runs (an
// "exercise-verdict" event; tools/site/practice_pages.py marks those blocks, on the
// practice pages and at the end of the chapters): a ✓ records the exercise as solved, and
// a later ✗ does not take it back. Opening one of an exercise's hints (a folded block
// marked data-hint, by a click or by Enter or Space on its summary) records that hint as
// used. Both records are kept under keys of this site (its root's path, so two courses
// served by one host keep apart). The drills page (practice/, each exercise's row marked
// data-drill and data-drill-hints) shows which are solved, how many hints each took, and
// a button clears both. Nothing leaves the browser.
(function () {
  "use strict";
  const root = new URL("..", document.currentScript.src);  // this file is javascripts/…
  const KEY = "attention-from-scratch:solved:" + root.pathname;
  const HINTS_KEY = "attention-from-scratch:hints:" + root.pathname;

  // Under KEY, { "ch02/ex1": "2026-12-02T04:30:00.000Z", ... }: when each exercise was
  // first solved; under HINTS_KEY, { "ch02/ex1": [1, 2], ... }: the hints opened.
  function read(key) {
    try {
      const record = JSON.parse(localStorage.getItem(key) || "{}");
      return record && typeof record === "object" ? record : {};
    } catch (error) {  // storage turned off (some private windows) or unreadable
      return {};
    }
  }

  function write(key, record) {
    try {
      if (Object.keys(record).length) localStorage.setItem(key, JSON.stringify(record));
      else localStorage.removeItem(key);
      return true;
    } catch (error) {
      return false;
    }
  }

  const solved = () => read(KEY);
  const save = (record) => write(KEY, record);

  function hintsOpened(exercise) {
    const opened = read(HINTS_KEY)[exercise];
    return Array.isArray(opened) ? opened : [];
  }

  // "toggle" does not bubble: listen in the capture phase, for every page view at once.
  document.addEventListener("toggle", (event) => {
    const hint = event.target;
    if (!(hint instanceof HTMLDetailsElement) || !hint.open || !hint.dataset.hint) return;
    const number = Number(hint.dataset.hintNumber);
    const record = read(HINTS_KEY);
    const opened = hintsOpened(hint.dataset.hint);
    if (opened.includes(number)) return;
    record[hint.dataset.hint] = [...opened, number].sort((a, b) => a - b);
    write(HINTS_KEY, record);
  }, true);

  document.addEventListener("exercise-verdict", (event) => {
    const { exercise, solved: passed } = event.detail;
    const record = solved();
    if (!passed || record[exercise]) return;
    record[exercise] = new Date().toISOString();
    save(record);
  });

  function show(progress, note) {
    const record = solved();
    const cells = [...document.querySelectorAll("[data-drill]")];
    for (const cell of cells) {
      const done = Boolean(record[cell.dataset.drill]);
      cell.textContent = done ? "✓ solved" : "not yet";
      cell.classList.toggle("drill-solved", done);
    }
    for (const cell of document.querySelectorAll("[data-drill-hints]")) {
      const opened = hintsOpened(cell.dataset.drillHints).length;
      cell.textContent = `${opened || "none"} of ${cell.dataset.hintCount}`;
    }
    const count = cells.filter((cell) => record[cell.dataset.drill]).length;
    progress.summary.textContent = (note ? note + " " : "") +
      `You have solved ${count} of ${cells.length} exercises (as this browser remembers).`;
  }

  function decorate() {
    const progress = document.querySelector("[data-drills-progress]");
    if (!progress) return;
    progress.summary = document.createElement("p");
    progress.summary.setAttribute("role", "status");  // read out when it changes
    progress.clear = document.createElement("button");
    progress.clear.type = "button";
    progress.clear.className = "md-button";
    progress.clear.textContent = "Clear my progress";
    progress.clear.addEventListener("click", () => {
      if (!window.confirm("Forget which exercises you have solved and which hints you " +
                          "opened, in this browser?")) return;
      show(progress, save({}) && write(HINTS_KEY, {}) ? "Progress cleared." : "This browser keeps no storage for " +
                                                     "this site: nothing to clear.");
    });
    progress.replaceChildren(progress.summary, progress.clear);
    show(progress);
  }

  if (window.document$) window.document$.subscribe(decorate);  // Material: every page view
  else document.addEventListener("DOMContentLoaded", decorate);
})();
