"""MkDocs hook: what the built site needs to be readable by every reader (WCAG 2.1 AA).

Figures follow the theme. A figure is an SVG drawn by a page with grey ink on a
transparent background (``INK``, the figure style of the page checker). The build writes
two variants of it into the site: ``name.svg`` with ink dark enough for the light theme
and ``name-dark.svg`` with ink light enough for the dark theme, and every
``<img src=".../figures/name.svg">`` becomes the pair, shown by theme through Material's
``#only-light`` / ``#only-dark``. Only exact colours are replaced: the ink, and those of
Matplotlib's default colour cycle that fall under 3:1 against the theme's background
(WCAG 1.4.11, lines and marks of a chart), each by the same hue a shade darker or lighter.
The committed SVG in ``docs/`` is untouched (the page checker compares against it).

Material's footer escapes a page title twice in its ``aria-label`` ("Machine Learning
&amp;amp; Engineering"), so the name read aloud differs from the visible text; the build
undoes the second escape.

Material's "Skip to content" link goes to the first heading of the table of contents: on a
chapter, section x.1, past the title, what the chapter teaches, the introduction and the
first code block. The build points it at the page's title, the top of the article.

The browser tests audit the result with axe-core (tests/site/test_accessibility.py).
"""

from __future__ import annotations

import re
from pathlib import Path

INK = "#8a8a8a"  # the ink figures are drawn with (tools/pagecheck/figures.py, STYLE)
LIGHT_INK = "#4d4d4d"  # 8.4:1 on white
DARK_INK = "#c4c6cc"  # 9.5:1 on the dark theme's background
# Matplotlib's default cycle (tab10), where a colour is under 3:1 (now 3.5:1 or more).
LIGHT_DATA = {"#ff7f0e": "#da6600", "#2ca02c": "#2b9c2b", "#e377c2": "#dc55b3",
              "#bcbd22": "#8d8d19", "#17becf": "#1294a1"}  # on white
DARK_DATA = {"#1f77b4": "#207dbd", "#d62728": "#db3738", "#8c564b": "#a66659"}  # on #1e2129
LIGHT_BACKGROUND = "#ffffff"  # Material's default scheme
DARK_BACKGROUND = "#1e2129"  # Material's slate scheme, hsl(225, 15%, 14%)
FIGURES = "assets/figures/"

_IMG = re.compile(r'<img\b[^>]*\bsrc="(?P<src>[^"#]*' + re.escape(FIGURES)
                  + r'(?P<name>[^"/#]+)\.svg)"[^>]*>')
_ARIA_LABEL = re.compile(r'aria-label="[^"]*"')
_SKIP = re.compile(r'<a href="[^"]*" class="md-skip">')
_TITLE = re.compile(r'<article class="md-content__inner md-typeset">.*?<h1(?P<attrs>[^>]*)>', re.S)
TITLE_ID = "__title"  # the page's title, when it has no id (Material's own are "__" too)


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


def recolor(svg: str, ink: str, data: dict[str, str] | None = None) -> str:
    """``svg`` with the figure ink replaced by ``ink``, and data colours by ``data``
    (exact colours, any case)."""
    colours = {INK: ink, **(data or {})}
    pattern = re.compile("|".join(map(re.escape, colours)), re.IGNORECASE)
    return pattern.sub(lambda m: colours[m.group(0).lower()], svg)


def fix_double_escaped_labels(html: str) -> str:
    """``aria-label="A &amp;amp; B"`` -> ``aria-label="A &amp; B"`` (Material's footer)."""
    return _ARIA_LABEL.sub(lambda m: m.group(0).replace("&amp;amp;", "&amp;"), html)


def skip_to_the_title(html: str) -> str:
    """Material's skip link pointed at the page's ``<h1>``, which gets an id if it has none."""
    title = _TITLE.search(html)
    if title is None or not _SKIP.search(html):
        return html
    named = re.search(r'\bid="([^"]+)"', title.group("attrs"))
    if named is None:
        at = title.start("attrs")
        html = html[:at] + f' id="{TITLE_ID}"' + html[at:]
    target = named.group(1) if named else TITLE_ID
    return _SKIP.sub(f'<a href="#{target}" class="md-skip">', html, count=1)


def write_theme_variants(site_dir: Path) -> list[Path]:
    """Rewrite every figure of the built site for the light theme and add its dark variant."""
    written = []
    figures = Path(site_dir) / FIGURES
    for path in sorted(figures.glob("*.svg")) if figures.is_dir() else []:
        if path.stem.endswith("-dark"):
            continue
        svg = path.read_text("utf8")
        path.write_text(recolor(svg, LIGHT_INK, LIGHT_DATA), "utf8")
        dark = path.with_name(f"{dark_name(path.stem)}.svg")
        dark.write_text(recolor(svg, DARK_INK, DARK_DATA), "utf8")
        written += [path, dark]
    return written


def on_page_content(html, page, config, files):
    return theme_figures(html)


def on_post_page(output, page, config):
    return skip_to_the_title(fix_double_escaped_labels(output))


def on_post_build(config):
    write_theme_variants(Path(config["site_dir"]))
