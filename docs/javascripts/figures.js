/* A figure drawn wider than the column opens full size: on a phone a schematic is shown at
   a fraction of its size, its labels a few pixels tall. Under such a figure an "Open full
   size" button appears (Tab reaches it, Enter or Space presses it), and tapping or
   clicking the figure itself does the same. The figure then fills a modal <dialog> at its
   own size, scrolling both ways where it is larger than the screen; Esc, the Close button
   or a tap beside the figure closes it, and the focus returns to where it was.

   A figure is a pair of <img> (the light and the dark variant, tools/site/accessibility.py),
   one of them hidden by the theme; the button belongs to the pair and shows only while the
   variant on screen is narrower than its own width. Runs on every page, instant navigation
   included (Material's document$), on resize, on a change of theme and as images load. */
(function () {
  "use strict";
  var FIGURE = 'article img[src*="assets/figures/"]';
  var dialog = null;
  var opener = null; // the button whose figure is open

  function shown(pair) {
    return pair.filter(function (img) { return img.offsetParent !== null; })[0];
  }

  function isShrunk(img) {
    return !!img && img.complete && img.naturalWidth > img.clientWidth + 1;
  }

  function theDialog() {
    if (dialog && document.body.contains(dialog)) return dialog;
    dialog = document.createElement("dialog");
    dialog.className = "md-typeset figure-dialog";
    dialog.setAttribute("aria-label", "Figure at full size");
    var close = document.createElement("button");
    close.type = "button";
    close.className = "md-button figure-dialog__close";
    close.textContent = "Close";
    close.addEventListener("click", function () { dialog.close(); });
    var view = document.createElement("div");
    view.className = "figure-dialog__view";
    view.tabIndex = 0; // the arrow keys scroll a figure larger than the screen
    view.setAttribute("role", "region");
    view.setAttribute("aria-label", "The figure, scrolls: arrow keys move it");
    dialog.append(close, view);
    dialog.addEventListener("click", function (event) {
      if (event.target === dialog || event.target === view) dialog.close();
    });
    dialog.addEventListener("close", function () {
      view.replaceChildren();
      if (opener) opener.focus();
      opener = null;
    });
    document.body.append(dialog);
    return dialog;
  }

  function open(pair, button) {
    var img = shown(pair);
    if (!img) return;
    var box = theDialog();
    var copy = img.cloneNode();
    copy.removeAttribute("loading");
    copy.style.width = img.naturalWidth + "px";
    box.querySelector(".figure-dialog__view").replaceChildren(copy);
    opener = button;
    box.showModal();
    box.querySelector(".figure-dialog__close").focus();
  }

  function pairs() {
    var found = [];
    document.querySelectorAll(FIGURE).forEach(function (img) {
      var last = found[found.length - 1];
      if (last && last[0].parentNode === img.parentNode && last[0].nextElementSibling === img) {
        last.push(img);
      } else {
        found.push([img]);
      }
    });
    return found;
  }

  function update() {
    pairs().forEach(function (pair) {
      var button = pair[pair.length - 1].nextElementSibling;
      if (!button || !button.classList.contains("figure-open")) {
        button = document.createElement("button");
        button.type = "button";
        button.className = "md-button figure-open";
        button.textContent = "Open full size";
        button.addEventListener("click", function () { open(pair, button); });
        pair.forEach(function (img) {
          img.addEventListener("click", function () { if (!button.hidden) open(pair, button); });
          img.addEventListener("load", later);
        });
        pair[pair.length - 1].after(button);
      }
      var shrunk = isShrunk(shown(pair));
      button.hidden = !shrunk;
      pair.forEach(function (img) { img.classList.toggle("figure-shrunk", shrunk); });
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
  window.addEventListener("load", later);
  new MutationObserver(later).observe(document.body, {
    attributes: true, attributeFilter: ["data-md-color-scheme"],
  });
})();
