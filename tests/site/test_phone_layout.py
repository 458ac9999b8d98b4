"""What a phone reader sees of formulas, tables and figures (390 px), and a desktop reader
of formulas (1280 px), measured in the built site.

A display formula wider than its column is cut off where the column ends. It must fit, or
sit in a container that visibly scrolls: a shadow at the edge where more of it waits
(docs/stylesheets/extra.css, the background of ``div.arithmatex``). At the desktop width
no formula scrolls at all: a scroll region a few pixels wide is noise. A figure's tick
labels are drawn as shapes; at the width a phone shows them they must still be at least
9 px tall (the figure's font size, scaled as the image is).
"""

import re

import pytest

from tests.site.browsing import DESKTOP, PHONE, visit
from tests.support import ROOT

DOCS = ROOT / "docs"
CHAPTERS = sorted(p.stem for p in (DOCS / "chapters").glob("ch[0-9][0-9]-*.md"))
SMALLEST_TICK_PX = 9.0
PHONE_COLUMN_PX = 358  # the article's width at 390 px

FORMULAS = """() => [...document.querySelectorAll('article div.arithmatex')].map(div => {
  const style = getComputedStyle(div);
  return {tex: div.querySelector('math').getAttribute('aria-label'),
          width: div.scrollWidth, column: div.clientWidth,
          scrolls: /(auto|scroll)/.test(style.overflowX),
          shadow: /gradient/.test(style.backgroundImage)
                  && /local/.test(style.backgroundAttachment)};
})"""


def too_wide(formulas: list[dict], may_scroll: bool) -> list[str]:
    return [f"{f['width']} px in a {f['column']} px column: {f['tex'][:70]}"
            for f in formulas if f["width"] > f["column"]
            and not (may_scroll and f["scrolls"] and f["shadow"])]


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["390px", "1280px"])
def test_display_formulas_fit_their_column_or_visibly_scroll(browser, server, viewport):
    seen = visit(browser, server, wait="load", viewport=viewport)
    page, wide, counted = seen.page, [], 0
    for chapter in CHAPTERS:
        page.goto(f"{server}chapters/{chapter}/", wait_until="load")
        page.evaluate("document.fonts.ready")
        formulas = page.evaluate(FORMULAS)
        counted += len(formulas)
        wide += [f"{chapter}: {line}" for line in too_wide(formulas, viewport is PHONE)]
    page.context.close()
    assert counted >= 20, counted
    assert not wide, (f"display formulas wider than their column at {viewport['width']} px:\n"
                      + "\n".join(wide))


def test_the_serving_speed_table_shows_every_column_on_a_phone(browser, server):
    seen = visit(browser, server + "chapters/ch11-serving/", wait="load", viewport=PHONE)
    cut = seen.page.evaluate("""() => [...document.querySelectorAll('article table')]
        .filter(t => t.getBoundingClientRect().right > document.querySelector('article')
                       .getBoundingClientRect().right + 1)
        .map(t => t.querySelector('tr').innerText.replace(/\\s+/g, ' '))""")
    seen.page.context.close()
    assert not cut, f"tables whose last columns fall outside the column at 390 px: {cut}"


def tick_size(svg: str) -> tuple[float, float] | None:
    """(smallest tick-label font size, figure width), both in the SVG's units; None when
    the figure has no tick labels."""
    width = float(re.search(r'viewBox="0 0 ([\d.]+)', svg)[1])
    sizes = [float(scale) * 100  # Matplotlib draws a glyph at size/100
             for tick in re.findall(r'<g id="[xy]tick_\d+">(.*?)</g>\s*</g>\s*</g>', svg, re.S)
             for scale in re.findall(r"scale\(([\d.]+) -", tick)]
    return (min(sizes), width) if sizes else None


def test_figure_tick_labels_are_legible_on_a_phone(browser, server):
    shown = {}
    seen = visit(browser, server, wait="load", viewport=PHONE, color_scheme="light")
    page = seen.page
    for chapter in CHAPTERS:
        page.goto(f"{server}chapters/{chapter}/", wait_until="load")
        shown |= dict(page.evaluate("""async () => {
            const shown = [...document.querySelectorAll(
                'article img[src*="assets/figures/"][src$="#only-light"]')];
            shown.forEach(img => { img.loading = 'eager'; });  // lazy ones have no size yet
            await Promise.all(shown.map(img => img.decode().catch(() => null)));
            return shown.map(img => [
                img.getAttribute('src').split('/').pop().replace('.svg#only-light', ''),
                img.getBoundingClientRect().width]);
        }"""))
    page.context.close()
    small, checked = [], []
    for name, width in sorted(shown.items()):
        size = tick_size((DOCS / "assets" / "figures" / f"{name}.svg").read_text("utf8"))
        if size is None:
            continue
        assert width > 0, f"{name} was not shown"
        px = size[0] * width / size[1]
        checked.append(name)
        if px < SMALLEST_TICK_PX:
            small.append(f"{name}: {px:.1f} px (shown {width:.0f} px wide)")
    assert {"ch02-heads", "ch03-pre-post-ln", "ch03-sinusoidal", "ch04-sampling-filters",
            "ch05-benchmark", "ch08-rope-scaling", "ch09-softcap", "ch10-crossover",
            "ch11-batching"} <= set(checked), checked
    assert not small, "tick labels under 9 px at 390 px:\n" + "\n".join(small)


def test_every_figure_is_drawn_for_a_phone():
    """Every figure of the site (the blog's and the practice pages' too, which the browser
    test above does not visit), scaled to the phone's column: its tick labels at least
    9 px tall (the last six drawn for the desktop were redrawn in issue 41)."""
    small = []
    for path in sorted((DOCS / "assets" / "figures").glob("*.svg")):
        found = tick_size(path.read_text("utf8"))
        if found is None:
            continue
        size, width = found  # in points: a CSS pixel is 3/4 of one
        px = size * min(1, PHONE_COLUMN_PX / (width * 4 / 3)) * 4 / 3
        if px < SMALLEST_TICK_PX:
            small.append(f"{path.stem}: {px:.1f} px")
    assert not small, "tick labels under 9 px in a 358 px column:\n" + "\n".join(small)
