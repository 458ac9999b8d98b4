// The reader's progress through the exercises, kept in this browser's local storage.
//
// run-in-page.js announces the verdict of every exercise's check it runs (an
// "exercise-verdict" event; tools/site/practice_pages.py marks those blocks, on the
// practice pages and at the end of the chapters): a ✓ records the exercise as solved, and
// a later ✗ does not take it back. The record is kept under a key of this site (its root's
// path, so two courses served by one host keep apart). The drills page (practice/, each
// exercise's row marked data-drill) shows which are solved and how many, and a button
// clears them. Nothing leaves the browser.
(function () {
  "use strict";
  const root = new URL("..", document.currentScript.src);  // this file is javascripts/…
  const KEY = "attention-from-scratch:solved:" + root.pathname;

  // { "ch02/ex1": "2026-12-02T04:30:00.000Z", ... }: when each exercise was first solved.
  function solved() {
    try {
      const record = JSON.parse(localStorage.getItem(KEY) || "{}");
      return record && typeof record === "object" ? record : {};
    } catch (error) {  // storage turned off (some private windows) or unreadable
      return {};
    }
  }

  function save(record) {
    try {
      if (Object.keys(record).length) localStorage.setItem(KEY, JSON.stringify(record));
      else localStorage.removeItem(KEY);
      return true;
    } catch (error) {
      return false;
    }
  }

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
      if (!window.confirm("Forget which exercises you have solved, in this browser?")) return;
      show(progress, save({}) ? "Progress cleared." : "This browser keeps no storage for " +
                                                     "this site: nothing to clear.");
    });
    progress.replaceChildren(progress.summary, progress.clear);
    show(progress);
  }

  if (window.document$) window.document$.subscribe(decorate);  // Material: every page view
  else document.addEventListener("DOMContentLoaded", decorate);
})();
