/* Live figures: the reader moves a control and the package redraws the figure.

   The build (tools/site/live_figures.py) writes each live figure's controls, as native
   labelled inputs, into a hidden element beside the static figure of the same name; this
   script shows it (without JavaScript the static figure is all there is). Pressing
   "Draw it in your browser", or moving any control, sends the controls' values to the
   Python that Run loads (run-in-page.js's worker), where attention.interactive computes
   the figure; nothing is downloaded before that. The answer is drawn as SVG: text labels
   on every bar and cell, each mark carrying its exact number in data-value (the browser
   tests compare them with CPython), colours from the theme's variables, shapes and words
   beside colour (ghost bars, "kept"/"cut" under a bar, a cross on a blocked cell). The
   figure's text alternative, below it, is a live region that says the key numbers.

   A change made while Python computes waits, and only the latest one is drawn. Each
   figure records how long its last redraw took after the control moved (data-draw-ms),
   which benchmarks/live_figures.py reads. */
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  // Viridis at nine stops (Matplotlib's), interpolated: the one colour map that reads in
  // both themes, as the static figures use it.
  var VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80",
                 "#5ec962", "#addc30", "#fde725"];

  function rgb(hex) {
    return [1, 3, 5].map(function (i) { return parseInt(hex.slice(i, i + 2), 16); });
  }

  function viridis(x) {
    var t = Math.max(0, Math.min(1, x)) * (VIRIDIS.length - 1);
    var i = Math.min(Math.floor(t), VIRIDIS.length - 2), f = t - i;
    var a = rgb(VIRIDIS[i]), b = rgb(VIRIDIS[i + 1]);
    return "rgb(" + a.map(function (v, k) { return Math.round(v + f * (b[k] - v)); }).join(",") + ")";
  }

  function el(name, attrs, text) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function shown(value, percent) {
    if (percent) return Math.round(100 * value) + "%";
    return Number.isInteger(value) ? String(value) : value.toFixed(3);
  }

  function svgFor(width, height, title) {
    return el("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height,
                       role: "img", "aria-label": title + " (the numbers are in the text below)",
                       "class": "live-figure__svg" });
  }

  // Bars: a value above each, its label and its mark (a word) below; ghost bars behind.
  function drawBars(panel, width) {
    var n = panel.values.length, top = 34, plot = 150, bottom = panel.marks ? 40 : 24;
    var svg = svgFor(width, top + plot + bottom, panel.title);
    var all = panel.values.concat(panel.before || []);
    var high = Math.max.apply(null, all.concat([0])), low = Math.min.apply(null, all.concat([0]));
    if (panel.percent) high = Math.max(high, 1e-9);
    var span = high - low || 1, slot = (width - 16) / n, bar = Math.min(36, slot * 0.7);
    var y = function (v) { return top + plot * (high - v) / span; };
    svg.append(el("text", { x: 8, y: 16, "class": "live-figure__heading" }, panel.title));
    svg.append(el("line", { x1: 4, x2: width - 4, y1: y(0), y2: y(0), "class": "live-figure__axis" }));
    panel.values.forEach(function (value, i) {
      var x = 8 + i * slot + (slot - bar) / 2, mark = panel.marks ? panel.marks[i] : "";
      if (panel.before) {
        svg.append(el("rect", { x: x, width: bar, y: Math.min(y(panel.before[i]), y(0)),
                                height: Math.abs(y(panel.before[i]) - y(0)),
                                "class": "live-figure__ghost", "data-before": panel.before[i] }));
      }
      svg.append(el("rect", { x: x, width: bar, y: Math.min(y(value), y(0)),
                              height: Math.max(Math.abs(y(value) - y(0)), 0.5),
                              "class": "live-figure__bar" + (mark ? " live-figure__bar--" + mark : ""),
                              "data-value": value, "data-label": panel.labels[i] }));
      var above = Math.min(y(value), y(0), panel.before ? y(panel.before[i]) : Infinity) - 4;
      svg.append(el("text", { x: x + bar / 2, y: above, "text-anchor": "middle",
                              "class": "live-figure__value" }, shown(value, panel.percent)));
      svg.append(el("text", { x: x + bar / 2, y: top + plot + 16, "text-anchor": "middle" },
                    panel.labels[i]));
      if (mark) {
        svg.append(el("text", { x: x + bar / 2, y: top + plot + 32, "text-anchor": "middle",
                                "class": "live-figure__mark" }, mark));
      }
    });
    return svg;
  }

  // A heatmap: each cell's colour from viridis and its value written in it where it fits;
  // a blocked cell is empty, with a cross.
  function drawHeatmap(panel, width) {
    var rows = panel.rows.length, cols = panel.cols.length;
    var longest = Math.max.apply(null, panel.rows.concat(panel.cols).map(function (s) { return s.length; }));
    var labelWidth = Math.min(110, 12 + 6.5 * longest);
    var cell = Math.max(12, Math.min(46, (width - labelWidth - 8) / cols));
    var rotate = cell < 6.5 * longest + 6;  // column labels that would overlap turn upright
    var head = 24 + (rotate ? labelWidth : 18);
    var svg = svgFor(Math.ceil(labelWidth + cols * cell + 8), Math.ceil(head + rows * cell + 8),
                     panel.title);
    svg.append(el("text", { x: 4, y: 16, "class": "live-figure__heading" }, panel.title));
    panel.cols.forEach(function (name, j) {
      var cx = labelWidth + (j + 0.5) * cell;
      svg.append(rotate
        ? el("text", { x: cx, y: head - 4, transform: "rotate(-90 " + cx + " " + (head - 4) + ")",
                       "dominant-baseline": "middle" }, name)
        : el("text", { x: cx, y: head - 6, "text-anchor": "middle" }, name));
    });
    panel.rows.forEach(function (name, i) {
      svg.append(el("text", { x: labelWidth - 6, y: head + (i + 0.5) * cell, "text-anchor": "end",
                              "dominant-baseline": "middle" }, name));
      panel.values[i].forEach(function (value, j) {
        var x = labelWidth + j * cell, yy = head + i * cell;
        var blocked = panel.blocked && panel.blocked[i][j];
        svg.append(el("rect", { x: x, y: yy, width: cell, height: cell,
                                fill: blocked ? "none" : viridis(value),
                                "class": "live-figure__cell" + (blocked ? " live-figure__cell--blocked" : ""),
                                "data-row": i, "data-col": j, "data-value": value }));
        if (blocked) {
          svg.append(el("path", { d: "M" + (x + cell * 0.3) + " " + (yy + cell * 0.3) + "l" + cell * 0.4 +
                                     " " + cell * 0.4 + "m0 " + -cell * 0.4 + "l" + -cell * 0.4 + " " + cell * 0.4,
                                  "class": "live-figure__cross" }));
        } else if (cell >= 30) {
          svg.append(el("text", { x: x + cell / 2, y: yy + cell / 2, "text-anchor": "middle",
                                  "dominant-baseline": "middle", "class": "live-figure__cell-text",
                                  fill: value > 0.55 ? "#000000" : "#ffffff" }, value.toFixed(2)));
        }
      });
    });
    return svg;
  }

  // Named numbers, one line each.
  function drawFacts(panel, width) {
    var svg = svgFor(width, 24 + 20 * panel.rows.length, panel.title);
    svg.append(el("text", { x: 8, y: 16, "class": "live-figure__heading" }, panel.title));
    panel.rows.forEach(function (row, i) {
      svg.append(el("text", { x: 8, y: 36 + 20 * i, "class": "live-figure__fact",
                              "data-value": row.value, "data-name": row.name },
                    row.name + ": " + row.text));
    });
    return svg;
  }

  var DRAW = { bars: drawBars, heatmap: drawHeatmap, facts: drawFacts };

  function values(box) {
    var out = {};
    box.querySelectorAll("input, select").forEach(function (input) {
      out[input.name] = input.type === "checkbox" ? input.checked : input.value;
    });
    return out;
  }

  function draw(box, result) {
    var drawing = box.querySelector(".live-figure__drawing");
    var width = Math.max(260, Math.min(drawing.clientWidth || 600, 640));
    drawing.replaceChildren.apply(drawing, result.panels.map(function (panel) {
      return DRAW[panel.kind](panel, width);
    }));
    box.querySelector(".live-figure__summary").textContent = result.summary;
  }

  async function update(box) {
    var state = box.liveFigure;
    if (state.busy) { state.again = true; return; }
    state.busy = true;
    var status = box.querySelector(".live-figure__status");
    var asked = values(box), since = state.changedAt || performance.now();
    if (!box.dataset.draws) status.textContent = "Starting Python…";
    var course = window.runInPage;
    var listen = function (text) { if (!box.dataset.draws) status.textContent = text; };
    course.statusListeners.add(listen);
    var answer = await course.compute(box.dataset.figure, asked);
    course.statusListeners.delete(listen);
    if (answer.ok) {
      state.last = JSON.parse(answer.result);
      draw(box, state.last);
      box.dataset.values = JSON.stringify(asked);  // what the drawing shows
      box.dataset.drawMs = (performance.now() - since).toFixed(1);
      box.dataset.draws = Number(box.dataset.draws || 0) + 1;
      status.textContent = "";
      box.querySelector(".live-figure__start-line").hidden = true;
    } else {
      status.textContent = "Could not draw: " + answer.error;
      box.dataset.failed = Number(box.dataset.failed || 0) + 1;
    }
    state.busy = false;
    if (state.again) {
      state.again = false;
      update(box);
    }
  }

  function wire(box) {
    if (box.liveFigure) return;
    box.liveFigure = { busy: false, again: false, changedAt: 0, last: null };
    box.hidden = false;
    var form = box.querySelector("form");
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    form.addEventListener("input", function (event) {
      var output = event.target.nextElementSibling;
      if (output && output.tagName === "OUTPUT") output.value = event.target.value;
      box.liveFigure.changedAt = performance.now();
      update(box);
    });
    box.querySelector(".live-figure__start").addEventListener("click", function () {
      box.liveFigure.changedAt = performance.now();
      update(box);
    });
  }

  function decorate() {
    if (!window.runInPage) return;
    document.querySelectorAll(".live-figure[data-figure]").forEach(wire);
  }

  var pending = 0;
  function redrawAll() {  // a new width: the same numbers, laid out again
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(function () {
      document.querySelectorAll(".live-figure[data-figure]").forEach(function (box) {
        if (box.liveFigure && box.liveFigure.last) draw(box, box.liveFigure.last);
      });
    });
  }

  if (window.document$) window.document$.subscribe(decorate);
  else document.addEventListener("DOMContentLoaded", decorate);
  window.addEventListener("resize", redrawAll);
})();
