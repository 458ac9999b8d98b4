"""Figures are deterministic SVG, saved by the checker from a fence's figure="..." attribute,
and a stale committed figure fails."""

import matplotlib.pyplot as plt
import pytest

from tools.pagecheck import figures


def draw():
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.imshow([[0.0, 1.0], [1.0, 0.0]])
    ax.set_title("test")
    return fig


def test_same_figure_gives_same_bytes_and_stale_figure_fails(tmp_path):
    draw()
    data = figures.current_figure_svg("page.md:1", "demo")
    assert b"<svg" in data and b"<dc:date>" not in data
    assert not plt.get_fignums()  # the checker closes what it saved
    with pytest.raises(figures.StaleFigure, match="does not exist yet: run `make outputs`"):
        figures.check_figure(tmp_path, "demo", data, "page.md:1")

    path = figures.write_figure(tmp_path, "demo", data)
    assert path == tmp_path / "docs" / "assets" / "figures" / "demo.svg"
    assert figures.write_figure(tmp_path, "demo", data) is None  # unchanged: not rewritten

    draw()
    figures.check_figure(tmp_path, "demo", figures.current_figure_svg("page.md:1", "demo"), "page.md:1")

    draw().axes[0].set_title("changed")
    changed = figures.current_figure_svg("page.md:1", "demo")
    with pytest.raises(figures.StaleFigure, match="differs"):
        figures.check_figure(tmp_path, "demo", changed, "page.md:1")


def test_a_figure_fence_whose_block_draws_nothing_fails():
    plt.close("all")
    with pytest.raises(figures.StaleFigure, match="drew no figure"):
        figures.current_figure_svg("page.md:3", "nothing")
