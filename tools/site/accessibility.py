"""MkDocs hook: what the built site needs to be readable by every reader (WCAG 2.1 AA).

Figures follow the theme. A figure is an SVG drawn by a page with grey ink on a
transparent background (``INK``, the figure style of the page checker). The build writes
two variants of it into the site: ``name.svg`` with ink dark enough for the light theme
and ``name-dark.svg`` with ink light enough for the dark theme, and every
``<img src=".../figures/name.svg">`` becomes the pair, shown by theme through Material's
``#only-light`` / ``#only-dark``. Only the exact ink colour is replaced; data colours stay.
The committed SVG in ``docs/`` is untouched (the page checker compares against it).

Material's footer escapes a page title twice in its ``aria-label`` ("Machine Learning
&amp;amp; Engineering"), so the name read aloud differs from the visible text; the build
undoes the second escape.

The browser tests audit the result with axe-core (tests/site/test_accessibility.py).
"""

from __future__ import annotations

import re
from pathlib import Path

INK = "#8a8a8a"  # the ink figures are drawn with (tools/pagecheck/figures.py, STYLE)
LIGHT_INK = "#4d4d4d"  # 8.4:1 on white
DARK_INK = "#c4c6cc"  # 9.5:1 on the dark theme's background
FIGURES = "assets/figures/"

_IMG = re.compile(r'<img\b[^>]*\bsrc="(?P<src>[^"#]*' + re.escape(FIGURES)
                  + r'(?P<name>[^"/#]+)\.svg)"[^>]*>')
_ARIA_LABEL = re.compile(r'aria-label="[^"]*"')


def dark_name(name: str) -> str:
    return f"{name}-dark"


def theme_figures(html: str) -> str:
    """Each figure ``<img>`` as a light and a dark variant, shown by Material's theme."""

    def pair(match: re.Match) -> str:
        img, src, name = match.group(0), match.group("src"), match.group("name")
        if "loading=" not in img:  # the hidden variant is then never fetched
            img = img.replace("<img", '<img loading="lazy"', 1)
        light = img.replace(f'src="{src}"', f'src="{src}#only-light"')
        dark_src = src[: -len(f"{name}.svg")] + f"{dark_name(name)}.svg#only-dark"
        dark = img.replace(f'src="{src}"', f'src="{dark_src}"')
        return light + dark

    return _IMG.sub(pair, html)


def recolor(svg: str, ink: str) -> str:
    """``svg`` with the figure ink replaced by ``ink`` (case-insensitive, exact colour)."""
    return re.sub(re.escape(INK), ink, svg, flags=re.IGNORECASE)


def fix_double_escaped_labels(html: str) -> str:
    """``aria-label="A &amp;amp; B"`` -> ``aria-label="A &amp; B"`` (Material's footer)."""
    return _ARIA_LABEL.sub(lambda m: m.group(0).replace("&amp;amp;", "&amp;"), html)


def write_theme_variants(site_dir: Path) -> list[Path]:
    """Rewrite every figure of the built site for the light theme and add its dark variant."""
    written = []
    figures = Path(site_dir) / FIGURES
    for path in sorted(figures.glob("*.svg")) if figures.is_dir() else []:
        if path.stem.endswith("-dark"):
            continue
        svg = path.read_text("utf8")
        path.write_text(recolor(svg, LIGHT_INK), "utf8")
        dark = path.with_name(f"{dark_name(path.stem)}.svg")
        dark.write_text(recolor(svg, DARK_INK), "utf8")
        written += [path, dark]
    return written


def on_page_content(html, page, config, files):
    return theme_figures(html)


def on_post_page(output, page, config):
    return fix_double_escaped_labels(output)


def on_post_build(config):
    write_theme_variants(Path(config["site_dir"]))
