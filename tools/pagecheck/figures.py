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


def svg_bytes(fig) -> bytes:
    """``fig`` as deterministic SVG bytes (the figure is closed afterwards)."""
    buffer = io.BytesIO()
    with plt.rc_context(STYLE):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return buffer.getvalue()


def current_figure_svg(where: str, name: str) -> bytes:
    """The SVG of the figure the block just drew; fail if it drew none."""
    if not plt.get_fignums():
        raise StaleFigure(f'{where}: the fence says figure="{name}", but the block drew no figure.')
    data = svg_bytes(plt.gcf())
    plt.close("all")
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
