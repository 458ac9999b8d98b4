"""An axis that counts whole things (requests, steps) is ticked at whole numbers only: a
tick at request 2.5 names a request that does not exist. Read from the committed SVG,
where Matplotlib writes each tick label's text as a comment."""

import re

import pytest

from tests.support import ROOT

FIGURES = ROOT / "docs" / "assets" / "figures"
# (figure, axes in drawing order from 1, axis): what the axis counts
COUNTING_AXES = {("ch11-batching", 1, "x"): "engine steps",
                 ("ch11-batching", 2, "x"): "requests in order of arrival"}


def tick_labels(svg: str, axes: int, axis: str) -> list[str]:
    """The tick labels of one axis of one axes group, as drawn."""
    groups = re.split(r'<g id="axes_\d+">', svg)
    part = groups[axes].split(f'<g id="matplotlib.axis_', 3)
    which = 1 if axis == "x" else 2
    return re.findall(r'<g id="[xy]tick_\d+">.*?<!-- (.*?) -->', part[which], re.S)


@pytest.mark.parametrize("figure, axes, axis", COUNTING_AXES)
def test_an_axis_that_counts_is_ticked_at_whole_numbers(figure, axes, axis):
    labels = tick_labels((FIGURES / f"{figure}.svg").read_text("utf8"), axes, axis)
    assert len(labels) >= 3, labels
    fractional = [label for label in labels if not re.fullmatch(r"−?\d+", label)]
    assert not fractional, (f"{figure}: the {axis} axis of axes {axes} counts "
                            f"{COUNTING_AXES[figure, axes, axis]} but is ticked at {fractional}")
