"""Figures drawn by code on the pages, saved as SVG by the checker, never by the page.

A page draws with plain Matplotlib and names the figure in the fence:

    ```{.python figure="ch05-benchmark"}
    fig, ax = plt.subplots()
    ...
    ```

After the block runs, the checker takes the current figure (``plt.gcf()``), renders it as
SVG (deterministic: fixed ids, no date) and compares it with the committed
``docs/assets/figures/ch05-benchmark.svg``: a stale or missing figure fails the block.
``make outputs`` writes it, and only for pages whose blocks all passed. A downloaded
notebook runs the same code and simply shows the figure.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Patch  # noqa: E402
from matplotlib.spines import Spine  # noqa: E402
from matplotlib.text import Annotation, Text  # noqa: E402

FIGURES = Path("docs") / "assets" / "figures"  # relative to the repository root
# A figure's name: it names a file in FIGURES, never a path (no ``/``, no ``..``).
FIGURE_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

# Mid-grey ink on a transparent background reads on both the light and the dark theme.
INK = "#8a8a8a"
STYLE = {
    "svg.hashsalt": "attention-from-scratch",
    "svg.fonttype": "path",
    "figure.facecolor": "none",
    "axes.facecolor": "none",
    "savefig.transparent": True,
    "text.color": INK,
    "axes.labelcolor": INK,
    "axes.edgecolor": INK,
    "xtick.color": INK,
    "ytick.color": INK,
    "font.size": 11,
}


class StaleFigure(AssertionError):
    """The committed SVG is not what the page's code draws now."""


class CollidingLabels(StaleFigure):
    """A label of the figure overlaps another label, an arrow or the edge of a box."""


def drawn_labels(fig) -> list:
    """The texts the figure shows: visible, not empty, and no label of a tick outside its
    axis' view (Matplotlib keeps those, but never draws them)."""
    hidden = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            slack = (hi - lo) * 1e-9
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not lo - slack <= tick.get_loc() <= hi + slack:
                    hidden |= {id(tick.label1), id(tick.label2)}
    return [t for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip() and id(t) not in hidden]


def label_collisions(fig, pad: float = 1.0) -> list[str]:
    """What collides in ``fig`` as drawn, in pixels: two labels that overlap, a label that
    an arrow crosses, a label that sticks out of a box (a patch) it partly covers. A label
    wholly inside a box (a block diagram's) is fine. ``pad`` pixels of each label's box
    may touch."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [(t, t.get_window_extent(renderer).padded(-pad)) for t in drawn_labels(fig)]
    found = [f"{a.get_text()!r} overlaps {b.get_text()!r}"
             for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:]
             if box_a.overlaps(box_b)]
    # An annotation's arrow leaves from its own text: only other labels count.
    owner = {id(a.arrow_patch): a for a in fig.findobj(Annotation)
             if a.arrow_patch is not None}
    arrows = [a.arrow_patch for a in fig.findobj(Annotation) if a.arrow_patch is not None]
    for patch in fig.findobj(Patch) + arrows:
        if not patch.get_visible() or isinstance(patch, Spine):
            continue
        if isinstance(patch, FancyArrowPatch):  # an annotation's arrow has no axes
            points = patch.get_transform().transform(patch.get_path().interpolated(50).vertices)
            found += [f"an arrow crosses {t.get_text()!r}" for t, box in boxes
                      if t is not owner.get(id(patch)) and box.count_contains(points)]
            continue
        if patch.axes is None or patch is patch.axes.patch:  # the figure's, the axes' own
            continue
        outline = patch.get_window_extent(renderer)
        found += [f"{t.get_text()!r} sticks out of a box" for t, box in boxes
                  if box.overlaps(outline) and not (
                      outline.x0 <= box.x0 and box.x1 <= outline.x1
                      and outline.y0 <= box.y0 and box.y1 <= outline.y1)]
    return sorted(set(found))


def svg_bytes(fig, close: bool = True) -> bytes:
    """``fig`` as deterministic SVG bytes (the figure is closed afterwards, unless not)."""
    buffer = io.BytesIO()
    with plt.rc_context(STYLE):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    if close:
        plt.close(fig)
    return buffer.getvalue()


def current_figure_svg(where: str, name: str) -> bytes:
    """The SVG of the figure the block just drew; fail if it drew none, or if its labels
    collide (with the course's style, at the size the page draws it)."""
    if not plt.get_fignums():
        raise StaleFigure(f'{where}: the fence says figure="{name}", but the block drew no figure.')
    fig = plt.gcf()
    data = svg_bytes(fig, close=False)  # first: drawing again can move a constrained layout
    with plt.rc_context(STYLE):
        collisions = label_collisions(fig)
    plt.close("all")
    if collisions:
        raise CollidingLabels(f'{where}: in figure "{name}", ' + "; ".join(collisions))
    return data


def check_figure(root: Path, name: str, data: bytes, where: str) -> None:
    """Fail unless ``docs/assets/figures/<name>.svg`` holds exactly ``data``."""
    path = root / FIGURES / f"{name}.svg"
    if not path.exists():
        raise StaleFigure(f"{where}: {path.relative_to(root)} does not exist yet: run `make outputs`.")
    if path.read_bytes() != data:
        raise StaleFigure(
            f"{where}: {path.relative_to(root)} differs from what the block draws now: "
            "run `make outputs` and review the figure."
        )


def write_figure(root: Path, name: str, data: bytes) -> Path | None:
    """Write the figure if it changed (whole, or not at all); return its path when written."""
    if not FIGURE_NAME.fullmatch(name):
        raise ValueError(f"figure name {name!r}: lower-case letters, digits and dashes only")
    path = root / FIGURES / f"{name}.svg"
    if path.exists() and path.read_bytes() == data:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, data)
    return path


def replace_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same folder, then
    ``os.replace``, so a failure at any moment leaves the old file whole."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.chmod(temporary, path.stat().st_mode & 0o7777 if path.exists() else 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
