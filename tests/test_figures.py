"""Figures are deterministic SVG, and a stale committed figure fails."""

import matplotlib.pyplot as plt
import pytest

from tools import figures


def draw():
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.imshow([[0.0, 1.0], [1.0, 0.0]])
    ax.set_title("test")
    return fig


def test_same_figure_gives_same_bytes_and_stale_figure_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(figures, "FIGURES", tmp_path)
    monkeypatch.delenv(figures.UPDATE_ENV, raising=False)
    with pytest.raises(figures.StaleFigure, match="make outputs"):
        figures.save_svg(draw(), "demo")  # not drawn yet

    monkeypatch.setenv(figures.UPDATE_ENV, "1")
    path = figures.save_svg(draw(), "demo")
    first = path.read_bytes()
    assert b"<svg" in first and b"<dc:date>" not in first

    monkeypatch.delenv(figures.UPDATE_ENV)
    figures.save_svg(draw(), "demo")  # an identical drawing passes
    assert path.read_bytes() == first

    fig = draw()
    fig.axes[0].set_title("changed")
    with pytest.raises(figures.StaleFigure, match="differs"):
        figures.save_svg(fig, "demo")
