/* The keyboard keeps the reader's place when Material's instant navigation replaces the page.
   Instant navigation fetches a page and swaps its content in; the first time the address
   changes on a page (a link to one of its sections, or Back to one) it fetches that same
   page again and swaps it in too. The swap takes away the element where the browser's next
   Tab would start (the linked heading, or the link the reader pressed), so that Tab went to
   the logo, dozens of stops above the section. Material puts the reader back at the section
   only when its fetch comes before its own record of the scroll position (100 ms after a
   scroll): a race that a slow machine loses (issue 38). After each swap, when nothing has
   the focus and the section the address names is on the screen, the focus goes to that
   section's heading, without scrolling and without a ring (it is not a control), and the
   next Tab goes on from there, as after a full page load. The heading leaves the tab order
   again once the focus moves on.
   The address keeps the anchor the reader asked for. With anchor tracking, the page being
   left writes its current section into the address 250 ms after each scroll, and one such
   write can come while the next page is being fetched: the new page's address then ends
   in the old page's anchor (/practice/ch10/#ex5). After each swap the address is put back
   to the one instant navigation went to (Material's location$). */
(function () {
  "use strict";
  var MARK = "data-reader-place"; // the heading this script made focusable, until blur

  function linkedSection() {
    var id = decodeURIComponent(location.hash.slice(1));
    return id ? document.getElementById(id) : null;
  }

  function onScreen(el) {
    var box = el.getBoundingClientRect();
    return box.bottom > 0 && box.top < window.innerHeight;
  }

  function keepPlace() {
    var el = linkedSection();
    var focused = document.activeElement;
    if (!el || (focused && focused !== document.body) || !onScreen(el)) return;
    if (!el.hasAttribute("tabindex")) {
      el.setAttribute("tabindex", "-1");
      el.setAttribute(MARK, "");
      el.addEventListener("blur", function () {
        el.removeAttribute("tabindex");
        el.removeAttribute(MARK);
      }, { once: true });
    }
    el.focus({ preventScroll: true });
  }

  var asked = null; // the address instant navigation went to last
  function keepAddress() {
    if (asked && asked.pathname === location.pathname && asked.hash !== location.hash) {
      history.replaceState(history.state, "", asked.href);
    }
  }

  if (typeof document$ === "undefined") return; // no instant navigation: nothing is swapped
  if (typeof location$ !== "undefined") {
    location$.subscribe(function (url) { asked = new URL(url.href); });
  }
  // At once when the page's container is swapped (before the next key press: a key that
  // came between the swap and a later frame went to the logo), and again once Material
  // has scrolled the new page into place (document$), without waiting for a frame.
  new MutationObserver(function (records) {
    var swapped = records.some(function (record) {
      return Array.prototype.some.call(record.removedNodes, function (node) {
        return node.nodeType === 1 && node.matches("[data-md-component=container]");
      });
    });
    if (swapped) keepPlace();
  }).observe(document.body, { childList: true });
  var loaded = false; // the first document$ is the page as it loaded, not a swap
  document$.subscribe(function () {
    if (loaded) {
      keepAddress();
      keepPlace();
    }
    loaded = true;
  });
})();
