"""Live figures in the browser: the reader moves each control, and the drawing is what the
package computes in CPython for the same values.

One tab of the returning reader's browser (tests/site/conftest.py) reads every page that
has a live figure, following links as a reader does, so Python starts once for all of
them. On each page, every figure is started, then every control moved with the
keyboard or the mouse as a reader would (arrow keys on a slider, Space on a checkbox,
an option of a select, typing into the text box); after each move the numbers drawn (the
SVG's data-value attributes, the ghost bars' data-before) and the text alternative must
be those of ``attention.interactive.compute`` run here for the values the page says it
drew. Tolerance 1e-12: WebAssembly's libm may differ from this machine's in the last bit.

axe-core audits the figures, with the rest of the article taken out (the whole page is
tests/site/test_accessibility.py's), in their first state in the light theme at 1280 px and the dark theme at 390 px, and
after the controls moved in the dark theme at 390 px and the light one at 1280 px; at
390 px neither the page nor a figure scrolls sideways. Without JavaScript the static
figure is all a reader sees: the live one is hidden in the HTML.
"""

import re
import time

import numpy as np
import pytest

from attention.interactive import FIGURES, compute
from tests.site.browsing import DESKTOP, PHONE, forget_the_site, wait_for_scheme
from tests.site.test_accessibility import THEME_TOGGLE, axe_source, settle, turn_dark  # noqa: F401
from tests.site.test_run_in_page import ReadingTab
from tests.support import ROOT

DOCS = ROOT / "docs"
FIGURE = re.compile(r'<div class="live-figure" data-figure="([^"]+)"></div>')
DRAWN = """box => ({
  values: [...box.querySelectorAll('[data-value]')].map(e => Number(e.dataset.value)),
  before: [...box.querySelectorAll('[data-before]')].map(e => Number(e.dataset.before)),
  summary: box.querySelector('.live-figure__summary').textContent,
  asked: JSON.parse(box.dataset.values || 'null'),
  status: box.querySelector('.live-figure__status').textContent})"""
SETTLED = """([box, n]) => Number(box.dataset.draws || 0) > n && !box.liveFigure.busy
  && !box.liveFigure.again || Number(box.dataset.failed || 0) > 0"""


def pages_with_live_figures() -> dict[str, list[str]]:
    """Page (its name under docs/) -> the live figures it asks for, in page order."""
    found = {}
    for path in sorted(DOCS.rglob("*.md")):
        names = FIGURE.findall(path.read_text("utf8"))
        if names:
            found[path.relative_to(DOCS).as_posix()] = names
    return found


def expected(result: dict) -> tuple[list[float], list[float]]:
    """What the drawing carries, in drawing order: every mark's value and every ghost's."""
    values, before = [], []
    for panel in result["panels"]:
        if panel["kind"] == "bars":
            values += panel["values"]
            before += panel.get("before", [])
        elif panel["kind"] == "heatmap":
            values += [v for row in panel["values"] for v in row]
        else:
            values += [row["value"] for row in panel["rows"]]
    return values, before


def check_drawing(page, box, name: str) -> dict:
    """The drawing equals CPython's figure for the values it says it drew."""
    drawn = page.evaluate(DRAWN, box)
    assert not drawn["status"], f"{name}: {drawn['status']}"
    shown = page.evaluate("""box => Object.fromEntries([...box.querySelectorAll('input, select')]
        .map(i => [i.name, i.type === 'checkbox' ? i.checked : i.value]))""", box)
    assert drawn["asked"] == shown, f"{name}: drew {drawn['asked']}, the controls show {shown}"
    result = compute(name, drawn["asked"])
    values, before = expected(result)
    assert len(drawn["values"]) == len(values), (name, drawn["asked"])
    np.testing.assert_allclose(drawn["values"], values, rtol=0, atol=1e-12,
                               err_msg=f"{name} at {drawn['asked']}")
    np.testing.assert_allclose(drawn["before"], before, rtol=0, atol=1e-12)
    assert drawn["summary"] == result["summary"], name
    return drawn["asked"]


def redrawn(page, box, act) -> None:
    """Do ``act`` (a reader's move) and wait until its last redraw is done."""
    draws = int(box.get_attribute("data-draws") or 0)
    act()
    page.wait_for_function(SETTLED, arg=[box, draws], timeout=120_000)


def move(page, box, control) -> None:
    """Move one control to another value, as a reader would."""
    field = box.query_selector(f'[name="{control.name}"]')
    kind = field.evaluate("f => f.type")
    if kind == "range":
        at_top = field.evaluate("f => Number(f.value) >= Number(f.max)")
        field.focus()
        for _ in range(3):
            page.keyboard.press("ArrowLeft" if at_top else "ArrowRight")
    elif kind == "checkbox":
        field.focus()
        page.keyboard.press("Space")
    elif kind.startswith("select"):
        options = field.evaluate("f => [...f.options].map(o => o.value)")
        field.select_option(options[-1] if field.evaluate("f => f.value") != options[-1]
                            else options[0])
    else:
        field.fill("Each head looks back at the keys it has seen.")


def set_theme(page, scheme: str, viewport: dict) -> None:
    if page.evaluate("() => document.body.dataset.mdColorScheme") != (
            "slate" if scheme == "dark" else "default"):
        if scheme == "dark":
            turn_dark(page)
        else:
            page.emulate_media(color_scheme="light")
            page.locator(THEME_TOGGLE).click()
            wait_for_scheme(page, "light")
    if page.viewport_size != viewport:
        page.set_viewport_size(viewport)
    settle(page)


def keep_only_the_figures(page) -> None:
    """Take everything but the live figures out of the article: the audits then look at
    the figures alone (test_accessibility.py audits the whole page), and axe and a change
    of theme do not spend seconds on a chapter's other 20,000 elements."""
    page.evaluate("""() => [...document.querySelector('article').children]
        .filter(child => !child.matches('.live-figure') && !child.querySelector('.live-figure'))
        .forEach(child => child.remove())""")


def audit_figures(page, axe_source, where: str) -> list[str]:
    """axe-core's WCAG 2.0/2.1 A and AA violations in the article (the figures)."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(content=axe_source)
    violations = page.evaluate(
        "tags => axe.run(document.querySelector('article'), {runOnly: {type: 'tag', "
        "values: tags}, resultTypes: ['violations']}).then(r => r.violations)",
        ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"])
    return [f"{page.url} [{where}]: {v['id']}: {v['nodes'][0]['target']} "
            f"{v['nodes'][0]['failureSummary'].splitlines()[-1].strip()}" for v in violations]


def fits_a_phone(page, boxes) -> list[str]:
    problems = []
    if page.evaluate("() => document.documentElement.scrollWidth > "
                     "document.documentElement.clientWidth"):
        problems.append(f"{page.url} scrolls sideways at 390 px")
    for box in boxes:
        if box.evaluate("b => b.scrollWidth > b.clientWidth + 1 || [...b.querySelectorAll('svg')]"
                        ".some(s => s.getBoundingClientRect().right > "
                        "b.getBoundingClientRect().right + 1)"):
            problems.append(f"{box.get_attribute('data-figure')} is wider than the column")
    return problems


def test_every_live_figure_follows_its_controls_as_cpython_computes_them(
        reader_profile, server, built_site, axe_source, capsys):
    forget_the_site(reader_profile, server)
    tab = ReadingTab(reader_profile)
    problems, moved, times = [], 0, []
    try:
        for source, names in pages_with_live_figures().items():
            start = time.perf_counter()
            seen, (_, failed, errors) = tab.open(server + built_site.addresses[source])
            page = seen.page
            set_theme(page, "light", DESKTOP)
            boxes = [page.wait_for_selector(f'.live-figure[data-figure="{n}"]:not([hidden])')
                     for n in names]
            for box, name in zip(boxes, names):
                redrawn(page, box, lambda: box.query_selector(".live-figure__start").click())
                check_drawing(page, box, name)
            keep_only_the_figures(page)
            problems += audit_figures(page, axe_source, "first, light, 1280 px")
            set_theme(page, "dark", PHONE)
            problems += audit_figures(page, axe_source, "first, dark, 390 px")
            for box, name in zip(boxes, names):
                for control in FIGURES[name].controls:
                    redrawn(page, box, lambda: move(page, box, control))
                    asked = check_drawing(page, box, name)
                    assert asked[control.name] != FIGURES[name].defaults()[control.name], \
                        (name, control.name, asked)
                    moved += 1
            problems += fits_a_phone(page, boxes)
            problems += audit_figures(page, axe_source, "moved, dark, 390 px")
            set_theme(page, "light", DESKTOP)
            problems += audit_figures(page, axe_source, "moved, light, 1280 px")
            problems += [f"{source}: {e}" for e in seen.errors[errors:] + seen.failed[failed:]]
            times.append(f"{source.split('/')[-1][:4]} {time.perf_counter() - start:.1f} s")
        # The audit is live: grey on white inside a figure is reported.
        page.evaluate("""() => document.querySelector('.live-figure__summary')
            .insertAdjacentHTML('afterend', '<p style="color: #bbbbbb">grey on white</p>')""")
        assert any("color-contrast" in p for p in audit_figures(page, axe_source, "grey")), \
            "axe did not report grey text on white in a live figure"
    finally:
        if tab.seen is not None:
            tab.seen.page.close()
    with capsys.disabled():
        print(f"\nlive figures: {sum(map(len, pages_with_live_figures().values()))} figures, "
              f"{moved} controls moved; " + ", ".join(times))
    assert not problems, "\n".join(problems)
    assert sum(url.endswith("/pyodide.asm.wasm.gz") for url in tab.seen.requests) == 1


def test_without_javascript_a_reader_sees_the_static_figure(built_site):
    """Each live figure is hidden in the HTML (the script shows it) and comes after the
    static figure of the same name."""
    for source, names in pages_with_live_figures().items():
        html = built_site.pages[DOCS / source]
        for name in names:
            live = html.index(f'<div class="live-figure" data-figure="{name}"')
            assert html[live:html.index(">", live)].endswith("hidden"), name
            static = html.find(f"assets/figures/{name}.svg")
            assert 0 <= static < live, f"{name}: no static figure of that name before it"
