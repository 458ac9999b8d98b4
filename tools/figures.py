"""Figures drawn by code on the pages, saved as SVG that the page checks keep current.

A page draws a figure with Matplotlib and calls ``save_svg(fig, "name")``. The SVG goes
to ``docs/assets/figures/name.svg`` and is committed, so the site builds without running
the pages; but it is an output like any other: when the tests run the page, the freshly
drawn SVG must equal the committed one (the file is deterministic: fixed ids, no date),
and ``make outputs`` rewrites it. A stale figure therefore fails the tests.
"""

import io
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

FIGURES = Path(__file__).resolve().parent.parent / "docs" / "assets" / "figures"
UPDATE_ENV = "PAGECHECK_UPDATE"  # set by `pytest --update-outputs`

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
plt.rcParams.update(STYLE)


class StaleFigure(AssertionError):
    """The committed SVG is not what the page's code draws now."""


def save_svg(fig, name: str) -> Path:
    """Save ``fig`` as ``docs/assets/figures/<name>.svg``; fail if the committed copy differs."""
    buffer = io.BytesIO()
    with plt.rc_context(STYLE):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    data = buffer.getvalue()
    path = FIGURES / f"{name}.svg"
    if os.environ.get(UPDATE_ENV) == "1":
        if not path.exists() or path.read_bytes() != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    elif not path.exists():
        raise StaleFigure(f"{path} does not exist yet: run `make outputs` to draw it.")
    elif path.read_bytes() != data:
        raise StaleFigure(f"{path} differs from what the page draws now: run `make outputs`.")
    return path
