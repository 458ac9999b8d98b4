"""Every line and every label of every figure reads on the theme it is shown in: 3:1 or
more against the page's background (WCAG 1.4.11, graphical objects; 1.4.3 asks 4.5:1 of
text, but a figure's labels are drawn as shapes and 3:1 is what the figure style promises).

The build writes each committed figure twice (tools/site/accessibility.py): a light variant
against white and a dark one against Material's slate. A colour the page chose itself, a
literal black or white, is not recoloured and vanishes in one of them: this test reads
both variants of every figure, as the build writes them, with no browser. What is drawn
over a picture (the numbers printed on a heatmap's cells, a rule across it) has the
picture behind it, not the page, and the legend's frame is a decoration: both are left out.
"""

import re
import xml.etree.ElementTree as ET

import pytest

from tests.support import ROOT
from tools.site.accessibility import (DARK_BACKGROUND, DARK_DATA, DARK_INK, LIGHT_BACKGROUND,
                                      LIGHT_DATA, LIGHT_INK, recolor)

FIGURES = sorted((ROOT / "docs" / "assets" / "figures").glob("*.svg"))
SVG = "{http://www.w3.org/2000/svg}"
THEMES = {"light": (LIGHT_INK, LIGHT_DATA, LIGHT_BACKGROUND),
          "dark": (DARK_INK, DARK_DATA, DARK_BACKGROUND)}
DRAWN = {"path", "use", "rect", "line", "polyline", "polygon", "circle", "ellipse"}
NUMBER = r"-?[\d.]+(?:e-?\d+)?"


def luminance(colour: str) -> float:
    """WCAG's relative luminance of ``#rrggbb``."""
    channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    light, dark = sorted([luminance(a), luminance(b)], reverse=True)
    return (light + 0.05) / (dark + 0.05)


def blend(colour: str, opacity: float, background: str) -> str:
    """What ``colour`` at ``opacity`` looks like over ``background``."""
    mix = [round(opacity * int(colour[i:i + 2], 16) + (1 - opacity) * int(background[i:i + 2], 16))
           for i in (1, 3, 5)]
    return "#" + "".join(f"{c:02x}" for c in mix)


def style(element) -> dict[str, str]:
    pairs = (part.split(":", 1) for part in element.get("style", "").split(";") if ":" in part)
    return {key.strip(): value.strip() for key, value in pairs}


def pictures(root) -> list[tuple[float, float, float, float]]:
    """(x0, y0, x1, y1) of every embedded picture, in the figure's coordinates
    (Matplotlib writes an image upside down: ``scale(1 -1) translate(0 -h)``)."""
    boxes = []
    for image in root.iter(f"{SVG}image"):
        x, y = float(image.get("x", 0)), float(image.get("y", 0))
        w, h = float(image.get("width")), float(image.get("height"))
        flip = re.fullmatch(rf"scale\(1 -1\) translate\(0 (?P<t>{NUMBER})\)",
                            image.get("transform", ""))
        boxes.append((x, -float(flip["t"]) - y - h, x + w, -float(flip["t"]) - y) if flip
                     else (x, y, x + w, y + h))
    return boxes


def points(element) -> list[tuple[float, float]]:
    """Where a mark is drawn: a path's vertices, or the origin of a translated glyph."""
    moved = re.match(rf"translate\((?P<x>{NUMBER}) (?P<y>{NUMBER})\)", element.get("transform", ""))
    if moved:
        return [(float(moved["x"]), float(moved["y"]))]
    numbers = [float(n) for n in re.findall(NUMBER, element.get("d", ""))]
    return list(zip(numbers[::2], numbers[1::2]))


def marks(root):
    """(what, colour, where, element) of every stroke and every glyph the figure draws,
    with its groups' styles inherited; a glyph's fill defaults to SVG's black."""
    def walk(element, inherited, groups, anchor):
        here = {**inherited, **style(element)}
        tag = element.tag.removeprefix(SVG)
        if tag in ("defs", "metadata", "clipPath", "image"):
            return
        groups = groups + [element.get("id", "")]
        if "transform" in element.attrib and anchor is None:
            anchor = element
        text = any(g.startswith("text_") for g in groups)
        if tag in DRAWN:
            opacity = float(here.get("opacity", 1))
            if text and here.get("fill", "#000000") != "none":
                colour = here.get("fill", "#000000")
                yield "text", colour, float(here.get("fill-opacity", 1)) * opacity, groups, anchor or element
            if here.get("stroke", "none") != "none" and here.get("stroke-width") != "0":
                yield ("stroke", here["stroke"], float(here.get("stroke-opacity", 1)) * opacity,
                       groups, anchor or element)
        for child in element:
            yield from walk(child, here, groups, anchor)

    yield from walk(root, {}, [], None)


def faint_marks(svg: str, background: str) -> list[str]:
    """Each stroke or glyph colour of ``svg`` under 3:1 against ``background``."""
    root = ET.fromstring(svg)
    boxes = pictures(root)
    faint = set()
    for what, colour, opacity, groups, element in marks(root):
        if not re.fullmatch(r"#[0-9a-f]{6}", colour.lower()):
            raise AssertionError(f"a {what} drawn with {colour!r}, not #rrggbb")
        seen = blend(colour.lower(), opacity, background)
        if contrast(seen, background) >= 3:
            continue
        legend_frame = any(g.startswith("legend_") for g in groups) and groups[-2].startswith(
            "patch_") and groups[-3].startswith("legend_")
        over_picture = any(all(x0 - 1 <= x <= x1 + 1 and y0 - 1 <= y <= y1 + 1  # a raster
                               for x, y in points(element))  # snaps to whole pixels
                           for x0, y0, x1, y1 in boxes) and points(element)
        if not (legend_frame or over_picture):
            faint.add(f"{what} {colour} ({contrast(seen, background):.2f}:1) in "
                      f"{'/'.join(g for g in groups if g)}")
    return sorted(faint)


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("figure", FIGURES, ids=lambda path: path.stem)
def test_every_stroke_and_label_of_a_figure_reads_on_its_theme(figure, theme):
    ink, data, background = THEMES[theme]
    faint = faint_marks(recolor(figure.read_text("utf8"), ink, data), background)
    assert not faint, f"{figure.name}, {theme} variant, on {background}:\n" + "\n".join(faint)


@pytest.mark.parametrize("drawn, faint", [
    ('<g id="line2d_1"><path d="M 0 0 L 9 9" style="fill: none; stroke: #000000"/></g>', True),
    ('<g id="line2d_1"><path d="M 0 0 L 9 9" style="fill: none; stroke: #8a8a8a"/></g>', False),
    ('<g id="text_1"><g transform="translate(1 2) scale(0.1 -0.1)"><use x="0"/></g></g>', True),
    ('<g id="text_1"><g style="fill: #ffffff" transform="translate(1 2)"><use x="0"/></g></g>',
     False),
    ('<g id="line2d_1"><path d="M 0 0 L 9 9" style="stroke: #8a8a8a; opacity: 0.2"/></g>', True),
])
def test_a_black_mark_is_faint_on_the_dark_theme_and_the_ink_is_not(drawn, faint):
    svg = f'<svg xmlns="http://www.w3.org/2000/svg"><g id="figure_1">{drawn}</g></svg>'
    found = faint_marks(recolor(svg, DARK_INK, DARK_DATA), DARK_BACKGROUND)
    assert bool(found) == faint, found
