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


# -- How the pages show their figures ---------------------------------------------------

import re  # noqa: E402

from tests.support import ROOT  # noqa: E402
from tools.source.markdown import read_page  # noqa: E402

DOCS = ROOT / "docs"
# The colour map of every heatmap on the site: it reads on the light and on the dark theme
# (its darkest colour, a deep violet, is still a colour on the dark background, and the
# figures draw cell edges in ink), where "Blues" fades to white.
COLOUR_MAP = "viridis"
CMAP = re.compile(r"""cmap\s*=\s*["']([^"']+)["']""")
# ch05 is being rewritten as a lesson in parallel; its two figures follow when it lands.
def figure_blocks():
    """(page name under docs/, block) for every figure fence of the site's pages."""
    found = []
    for path in sorted(DOCS.rglob("*.md")):
        name = path.relative_to(DOCS).as_posix()
        if "figure=" not in path.read_text("utf8"):
            continue
        found += [(name, block) for block in read_page(path, ROOT).blocks
                  if "figure" in block.attributes]
    return found


def where(item):
    return f"{item[0]}:{item[1].line}"


@pytest.mark.parametrize("item", figure_blocks(), ids=where)
def test_a_figure_shows_first_and_its_code_is_folded_away_under_it(item):
    """The reader meets the picture, then a collapsed block with the code that drew it
    (``??? note``, closed): the code of a figure, up to fifty lines of Matplotlib, is for
    the reader who wants it, not a wall to scroll past before the picture."""
    page, block = item
    lines = (DOCS / page).read_text("utf8").split("\n")
    fence = block.line - 1
    indent = len(lines[fence]) - len(lines[fence].lstrip())
    opener = next(i for i in range(fence - 1, -1, -1)
                  if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) < indent)
    assert indent and re.match(r"\s*\?\?\? ", lines[opener]), (
        f"{page}:{block.line}: the figure's code is not inside a collapsed `??? note`")
    before = "\n".join(lines[max(0, opener - 4):opener])
    image = f"figures/{block.attributes['figure']}.svg)"
    assert image in before, (f"{page}:{block.line}: the figure {image[:-1]} is not shown "
                             "just above the collapsed block that draws it")


@pytest.mark.parametrize("item", figure_blocks(), ids=where)
def test_every_heatmap_uses_the_one_colour_map_that_reads_in_both_themes(item):
    page, block = item
    assert set(CMAP.findall(block.code)) <= {COLOUR_MAP}, (
        f"{page}:{block.line}: a colour map other than {COLOUR_MAP}")


def schematic(label_x: float):
    """Two boxes joined by a labelled arrow, the label at ``label_x``."""
    from matplotlib.patches import Rectangle

    fig, ax = plt.subplots(figsize=(4, 1.5))
    for x in (0.0, 3.0):
        ax.add_patch(Rectangle((x, 0), 1, 1, facecolor="none", edgecolor="grey"))
    ax.annotate("", (3.0, 0.5), (1.0, 0.5), arrowprops=dict(arrowstyle="->"))
    ax.text(label_x, 0.6, "a label of some width", ha="center", va="bottom", fontsize=9)
    ax.set_xlim(-0.1, 4.1)
    ax.set_ylim(-0.1, 1.1)
    ax.axis("off")
    return fig


def test_labels_that_collide_fail_the_figure_and_clear_ones_pass():
    """The fault of ch02's first split/merge figure: an arrow's label wider than the arrow,
    running into the boxes at its ends (and below the arrow, across it)."""
    plt.close("all")
    schematic(2.0)
    assert figures.current_figure_svg("page.md:1", "clear").startswith(b"<?xml")
    fig = schematic(0.9)  # over the edge of the first box
    assert figures.label_collisions(fig) == ["'a label of some width' sticks out of a box"]
    with pytest.raises(figures.CollidingLabels, match='"crowded".*sticks out of a box'):
        figures.current_figure_svg("page.md:2", "crowded")
    assert not plt.get_fignums()
    fig = schematic(2.0)
    fig.axes[0].texts[-1].set_y(0.45)  # the label (texts[0] is the arrow), on the arrow
    assert figures.label_collisions(fig) == ["an arrow crosses 'a label of some width'"]
    fig.axes[0].text(2.0, 0.47, "another")
    assert "'a label of some width' overlaps 'another'" in figures.label_collisions(fig)
    plt.close("all")


def test_an_annotation_arrow_may_leave_its_own_label_but_not_cross_another():
    import matplotlib.pyplot as plt

    from tools.pagecheck.figures import label_collisions

    fig, ax = plt.subplots()
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    ax.annotate("a two-line\nlabel", (9, 1), (1.5, 9), ha="center",
                arrowprops=dict(arrowstyle="->"))
    assert label_collisions(fig) == []
    ax.text(5, 5, "in the way", ha="center", va="center")
    assert "an arrow crosses 'in the way'" in label_collisions(fig)
    plt.close(fig)
