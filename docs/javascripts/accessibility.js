/* Keyboard access to every region that scrolls (WCAG 2.1.1, axe's scrollable-region-focusable).
   A box whose content is wider or taller than the box itself gets tabindex="0", so Tab
   reaches it and the arrow keys scroll it, with role="region" and a name saying what it is,
   which a screen reader announces on arrival. When a wider window makes it fit again, it
   leaves the tab order. Material already does this for code blocks (<code tabindex="0">);
   this covers the rest: wide tables, notebook cells and outputs, formulas, and any code
   block Material leaves out (it does this only where the device can hover).
   Runs on every page, instant navigation included (Material's document$), and on resize. */
(function () {
  "use strict";
  var REGIONS = [
    [".md-typeset__scrollwrap", "Table"],
    [".highlight-ipynb", "Code"],
    [".jp-OutputArea-output pre", "Output"],
    [".jp-OutputArea-output", "Output"],
    ["div.arithmatex", "Formula"],
    [".highlight pre > code", "Code"],
    [".md-typeset pre", "Code"],
  ];
  var MARK = "data-scroll-region"; // the attributes this script added, to take back

  function scrolls(el) {
    var style = getComputedStyle(el);
    var x = /(auto|scroll)/.test(style.overflowX) && el.scrollWidth > el.clientWidth + 1;
    var y = /(auto|scroll)/.test(style.overflowY) && el.scrollHeight > el.clientHeight + 1;
    return x || y;
  }

  function update() {
    var seen = new Set();
    REGIONS.forEach(function (entry) {
      document.querySelectorAll(entry[0]).forEach(function (el) {
        if (seen.has(el)) return;
        seen.add(el);
        var ours = el.hasAttribute(MARK);
        if (!ours && el.hasAttribute("tabindex")) return; // Material's, or the page's own
        if (scrolls(el)) {
          if (ours) return;
          var added = ["tabindex"];
          el.setAttribute("tabindex", "0");
          if (!el.hasAttribute("role")) {
            el.setAttribute("role", "region");
            added.push("role");
          }
          if (!el.hasAttribute("aria-label") && !el.hasAttribute("aria-labelledby")) {
            el.setAttribute("aria-label", entry[1] + ", scrolls: arrow keys move it");
            added.push("aria-label");
          }
          el.setAttribute(MARK, added.join(" "));
        } else if (ours) {
          el.getAttribute(MARK).split(" ").forEach(function (name) {
            el.removeAttribute(name);
          });
          el.removeAttribute(MARK);
        }
      });
    });
  }

  var pending = 0;
  function later() {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(update);
  }
  if (typeof document$ !== "undefined") {
    document$.subscribe(later); // every page, instant navigation included
  } else {
    document.addEventListener("DOMContentLoaded", later);
  }
  window.addEventListener("resize", later);
  window.addEventListener("load", later); // fonts and images change sizes
})();
