"""Readable by every reader: the built site audited for WCAG 2.1 AA in a real browser.

axe-core (npm, pinned in package-lock.json, installed by `make`) is injected into each
page by the test; the site never ships it. Every page, the 404 page included, is audited
in the light and the dark theme and at a desktop width and a 390-px phone width (every
combination on the pages that stand for the site's frame, two on the others: see
EVERY_STATE below), with every collapsible opened so the hidden answers are audited too:
one test per page (which parallel workers share), with one load of the page. The page then turns dark as for a
reader whose system asks for the dark theme: the media query says so, and the palette,
which Material picks only as a page loads, follows through the header's toggle. The rule
sets are WCAG 2.0 and 2.1, levels A and AA.
What an automated audit cannot see is driven by hand: the interview answers, the content
tabs and a scrolling table, with the keyboard only, and the states a screen reader
announces (read from Chromium's accessibility tree); figures have real text alternatives
and follow the theme.
"""

import io
import re

import pytest
from PIL import Image

from tests.support import ROOT
from tests.site.browsing import DESKTOP, PHONE, page_paths, visit, visit_in, wait_for_scheme
from tools.site.notebook_pages import notebook_source
from tools.site.practice_pages import DRILLS, practice_chapters, practice_source

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
DOCS = ROOT / "docs"
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
NOT_FOUND = "no/such/page/"
CHAPTER_2 = "chapters/ch02-self-attention/"


@pytest.fixture(scope="module")
def axe_source() -> str:
    if not AXE.exists():
        pytest.fail("axe-core is not installed: `make test` installs it (npm ci, from "
                    "package-lock.json)", pytrace=False)
    return AXE.read_text("utf8")


def settle(page):
    """Wait until resize handlers have run and no transition is under way (colours and
    positions are final: axe measures what is on the screen at that moment)."""
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.wait_for_function("() => document.getAnimations().every(a => a.playState !== 'running')",
                           timeout=10_000)


def audit(page, axe_source: str) -> list[dict]:
    """axe-core's WCAG 2.0/2.1 A and AA violations on the page as it is now."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(content=axe_source)
    result = page.evaluate(
        "tags => axe.run(document, {runOnly: {type: 'tag', values: tags},"
        " resultTypes: ['violations']})", WCAG_AA)
    return result["violations"]


def summary(found: dict) -> str:
    """One line per page, theme and width: rule (nodes) and the first element at fault."""
    lines = []
    for where, violations in found.items():
        for v in violations:
            node = v["nodes"][0]
            lines.append(f"{where}: {v['id']} ({len(v['nodes'])}): {node['target']} "
                         f"{node['failureSummary'].splitlines()[-1].strip()}")
    return "\n".join(lines)


def named_pages() -> list[str]:
    """The pages known before the build, by their names under docs/: every Markdown page,
    the drills page, every practice page and the notebook page of each chapter and
    practice page. Each gets audit tests of its own, so that
    xdist spreads them."""
    markdown = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    practice = [practice_source(c) for c in practice_chapters(ROOT)]
    notebooks = [notebook_source(page) for page in markdown + practice
                 if page.startswith(("chapters/", "practice/"))]
    return markdown + [DRILLS] + practice + notebooks


OTHER_PAGES = "every other page"


def audited_paths(built_site, page: str) -> list[str]:
    """The site paths one audit test visits: its page's, or for OTHER_PAGES every page
    that no name covers (the generated ones: questions, blog archive...) and the 404 page."""
    if page != OTHER_PAGES:
        return [built_site.addresses[page]]
    named = {built_site.addresses[name] for name in named_pages()}
    return [path for path in page_paths(built_site) if path not in named] + [NOT_FOUND]


def test_the_audit_visits_every_page_of_the_site(built_site):
    named = {built_site.addresses.get(name) for name in named_pages()}
    paths = page_paths(built_site)
    assert named <= set(paths), f"named pages missing from the site: {named - set(paths)}"
    assert len(paths) > 5, paths
    assert FRAME_PAGES <= set(named_pages()), "a page that stands for the frame is gone"
    assert KIND_STAND_INS <= set(named_pages()) | {OTHER_PAGES}, \
        "a page that stands for its kind is gone"


# The header's theme toggle: the label that shows is the one that switches to the other theme.
THEME_TOGGLE = "form[data-md-component=palette] label:not([hidden])"
WIDTHS = [("desktop", DESKTOP), ("390 px", PHONE)]
# The theme and width of each audit, one change at a time from the first: every theme and
# every width on the pages that stand for the site's frame (header, navigation, search,
# footer: the same on every page), and on every other page both themes and both widths in
# two audits, light at the desktop width and dark at the phone width. What a page adds to
# the frame, its article, has the same colours at both widths, so each theme is checked
# once for it and each width once (an audit of a chapter costs seconds).
EVERY_STATE = [("light", "desktop"), ("light", "390 px"), ("dark", "390 px"), ("dark", "desktop")]
TWO_STATES = [("light", "desktop"), ("dark", "390 px")]
FRAME_PAGES = {"index.md", "chapters/ch01-foundations.md"}


def turn_dark(page) -> None:
    """Turn a page loaded in the light theme dark, as for a reader whose system asks for the
    dark theme: the media query says so, and the palette (picked on load) follows."""
    page.emulate_media(color_scheme="dark")
    page.locator(THEME_TOGGLE).click()
    wait_for_scheme(page, "dark")


# `make test` audits the frame pages and one page of each kind; `make audit` (which CI
# runs after `make test`) audits the other chapters, practice pages, notebook pages and
# posts in the same way. The pages of a kind share their template, their styles and their
# elements (chapter 2 has figures, a live figure, formulas, tables, exercises, hints and
# questions), and auditing every page took about as long as the rest of `make test`
# together (370 s of the two workers' time, December 2026).
KIND_STAND_INS = {"chapters/ch02-self-attention.md", "practice/ch02.md", DRILLS,
                  notebook_source("chapters/ch02-self-attention.md"),
                  notebook_source("practice/ch02.md"),
                  "blog/index.md", "blog/posts/attention-numpy-speed.md", OTHER_PAGES}


def audited_in_make_test(page: str):
    """The page as a test case: left to `make audit` unless it stands for its kind."""
    if page in FRAME_PAGES | KIND_STAND_INS:
        return page
    return pytest.param(page, marks=pytest.mark.audit)


@pytest.mark.parametrize("page", [audited_in_make_test(page)
                                  for page in named_pages() + [OTHER_PAGES]])
def test_every_page_has_no_wcag_aa_violation(browser, server, built_site, axe_source, page):
    found = {}
    for path in audited_paths(built_site, page):
        # After the load event only the favicon is still fetched: no wait for the network to
        # go idle (half a second each time); the theme and the layout are awaited instead.
        seen = visit(browser, server + path, expect_status=404 if path == NOT_FOUND else 200,
                     wait="load", color_scheme="light", viewport=DESKTOP)
        tab = seen.page
        tab.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
        wait_for_scheme(tab, "light")  # audit the theme named, never the other one
        shown = "light"
        for scheme, width in EVERY_STATE if page in FRAME_PAGES else TWO_STATES:
            if scheme != shown:  # the states go light, then dark
                turn_dark(tab)
                shown = scheme
            viewport = dict(WIDTHS)[width]
            if tab.viewport_size != viewport:
                tab.set_viewport_size(viewport)
            settle(tab)
            violations = audit(tab, axe_source)
            if violations:
                found[f"/{path} [{scheme}, {width}]"] = violations
        tab.context.close()
    assert not found, "axe-core finds WCAG AA violations:\n" + summary(found)


def test_the_audit_finds_a_violation_when_there_is_one(browser, server, axe_source):
    """The audit is live: a low-contrast paragraph and an unlabelled image are reported."""
    seen = visit(browser, server, wait="load")
    seen.page.evaluate("""() => {
        const p = document.createElement('p');
        p.textContent = 'grey on white';
        p.style.cssText = 'color: #bbbbbb; background: #ffffff';
        const img = document.createElement('img');
        img.src = 'assets/logo.svg';
        document.querySelector('article').append(p, img);
    }""")
    rules = {v["id"] for v in audit(seen.page, axe_source)}
    assert {"color-contrast", "image-alt"} <= rules, rules
    seen.page.context.close()


def test_the_audit_sees_the_dark_theme_once_the_page_turns_dark(browser, server, axe_source):
    """Text that only the dark theme draws too dark is reported once the page turns dark."""
    seen = visit(browser, server, wait="load", color_scheme="light")
    seen.page.add_style_tag(content="[data-md-color-scheme=slate] article p { color: #333 }")
    assert "color-contrast" not in {v["id"] for v in audit(seen.page, axe_source)}
    turn_dark(seen.page)
    settle(seen.page)
    assert "color-contrast" in {v["id"] for v in audit(seen.page, axe_source)}
    seen.page.context.close()


def test_the_site_does_not_ship_axe(built_site):
    shipped = [p for p in built_site.site_dir.rglob("*") if "axe" in p.name.lower()]
    assert not shipped, shipped


# -- Figures ----------------------------------------------------------------------------

FIGURE = re.compile(r'<img\b[^>]*src="([^"]*assets/figures/[^"]+)"[^>]*>')
GENERIC_ALT = {"figure", "image", "chart", "plot", "graph", "diagram", "picture"}


def test_every_image_says_what_it_shows(built_site):
    bad = []
    for source, html in built_site.pages.items():
        article = html[html.find("<article"):html.find("</article>")]
        for img in re.findall(r"<img\b[^>]*>", article):
            alt = re.search(r'\balt=(["\'])(.*?)\1', img)  # either quote is HTML
            words = alt.group(2).split() if alt else []
            if len(words) < 6 or alt.group(2).strip().lower().rstrip(".") in GENERIC_ALT:
                bad.append(f"{source.name}: {img[:120]}")
    assert not bad, "images whose alt text does not say what they show:\n" + "\n".join(bad)


def test_the_theme_variants_replace_the_ink_figures_are_drawn_with():
    from tools.pagecheck.figures import INK as FIGURE_INK
    from tools.site.accessibility import INK

    assert INK == FIGURE_INK.lower()


def test_every_figure_has_a_light_and_a_dark_variant(built_site):
    from tools.site.accessibility import DARK_DATA, DARK_INK, INK, LIGHT_DATA, LIGHT_INK

    sources = [src for html in built_site.pages.values() for src in FIGURE.findall(html)]
    assert sources, "no figure found on any page"
    assert all(src.endswith(("#only-light", "#only-dark")) for src in sources), sources
    light = sorted(s for s in sources if s.endswith("#only-light"))
    dark = sorted(s for s in sources if s.endswith("#only-dark"))
    assert [s.replace(".svg#only-light", "-dark.svg#only-dark") for s in light] == dark
    figures = built_site.site_dir / "assets" / "figures"
    for path in figures.glob("*.svg"):
        svg = path.read_text("utf8").lower()
        assert INK not in svg, f"{path.name} still has the neutral ink {INK}"
        dark = path.stem.endswith("-dark")
        ink, faint = (DARK_INK, DARK_DATA) if dark else (LIGHT_INK, LIGHT_DATA)
        assert ink in svg, f"{path.name} is not drawn with {ink}"
        assert not [c for c in faint if c in svg], f"{path.name} keeps a colour under 3:1"


@pytest.mark.parametrize("scheme, suffix", [("light", ".svg#only-light"),
                                            ("dark", "-dark.svg#only-dark")])
def test_the_figure_shown_matches_the_theme(browser, server, scheme, suffix):
    seen = visit(browser, server + CHAPTER_2, color_scheme=scheme, wait="load")
    page = seen.page
    figures = page.locator('article img[src*="assets/figures/"]')
    shown = [i for i in range(figures.count())
             if figures.nth(i).evaluate("img => getComputedStyle(img).display") != "none"]
    assert shown and 2 * len(shown) == figures.count(), "one variant of each figure is shown"
    assert all(figures.nth(i).get_attribute("src").endswith(suffix) for i in shown)
    figure = figures.nth(shown[0])
    figure.scroll_into_view_if_needed()  # it loads lazily; the hidden variant never does
    page.wait_for_function("img => img.complete && img.naturalWidth > 0",
                           arg=figure.element_handle(), timeout=10_000)
    assert not seen.failed and not seen.errors
    page.context.close()


def test_a_wide_figure_opens_full_size_on_a_tap_and_from_the_keyboard(browser, server):
    """At 390 px a schematic is shown at a fraction of its size: a tap on it opens it full
    size in a dialog that scrolls; Esc closes it and the focus returns to the figure's
    button, which Tab reaches and Enter presses (docs/javascripts/figures.js)."""
    seen = visit(browser, server + CHAPTER_2, wait="load", viewport=PHONE, has_touch=True,
                 color_scheme="light")
    page = seen.page
    figure = page.locator('article img[src$="ch02-attention-shapes.svg#only-light"]')
    figure.scroll_into_view_if_needed()  # it loads lazily
    page.wait_for_function("img => img.complete && img.naturalWidth > 0",
                           arg=figure.element_handle(), timeout=10_000)
    natural, shown = figure.evaluate("img => [img.naturalWidth, img.clientWidth]")
    assert shown < natural / 2, (shown, natural)  # the labels are drawn at under half size
    button = page.locator("article .figure-open").first
    button.wait_for(state="visible")
    figure.tap()
    dialog = page.locator("dialog.figure-dialog[open]")
    dialog.wait_for(state="visible")
    full = dialog.locator("img")
    assert full.evaluate("img => img.clientWidth") == natural  # its own size, not the screen's
    assert full.get_attribute("alt") == figure.get_attribute("alt")
    view = dialog.locator(".figure-dialog__view")
    assert view.evaluate("v => v.scrollWidth > v.clientWidth")  # wider than the phone: scrolls
    assert page.evaluate("() => document.activeElement.textContent") == "Close"
    assert announced(page, "dialog", "Figure at full size")["modal"] is True
    page.keyboard.press("Escape")
    assert not dialog.count()
    assert page.evaluate("() => document.activeElement.classList.contains('figure-open')")
    page.keyboard.press("Shift+Tab")  # away, then back with the keyboard alone
    tab_until(page, "e.classList.contains('figure-open')", most=5)
    page.keyboard.press("Enter")
    dialog.wait_for(state="visible")
    page.keyboard.press("Tab")  # from Close to the figure, which the arrow keys scroll
    assert page.evaluate("() => document.activeElement.getAttribute('role')") == "region"
    page.keyboard.press("Escape")
    assert not dialog.count()
    assert not seen.failed and not seen.errors
    page.context.close()


def test_a_figure_that_fits_offers_no_full_size(browser, server):
    """At a desktop width a figure narrower than the column has nothing to open."""
    seen = visit(browser, server + "chapters/ch03-transformer-block/", wait="load",
                 viewport=DESKTOP, color_scheme="light")
    page = seen.page
    figure = page.locator('article img[src$="ch03-model-pipeline.svg#only-light"]')
    figure.scroll_into_view_if_needed()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0",
                           arg=figure.element_handle(), timeout=10_000)
    settle(page)
    assert figure.evaluate("img => img.naturalWidth <= img.clientWidth + 1")
    button = figure.locator("xpath=following-sibling::button[1]")
    assert button.count() == 1 and not button.is_visible()
    page.context.close()


# -- The keyboard alone -----------------------------------------------------------------

def tab_until(page, condition: str, most: int = 40) -> None:
    """Press Tab until ``condition`` (JS, of ``document.activeElement`` as ``e``) holds."""
    for _ in range(most):
        page.keyboard.press("Tab")
        if page.evaluate(f"() => {{ const e = document.activeElement; return !!({condition}); }}"):
            return
    raise AssertionError(f"{most} presses of Tab never reached an element where {condition}")


def announced(page, role: str, name: str) -> dict:
    """What Chromium's accessibility tree tells a screen reader about the element: the first
    node of the ``role`` whose name starts with ``name``, in tree order.

    Asked of the document's tree for that role alone: the whole tree of a chapter (20,000
    nodes) costs seconds of CPU to compute and send.
    """
    cdp = page.context.new_cdp_session(page)
    try:
        document = cdp.send("Runtime.evaluate", {"expression": "document"})["result"]["objectId"]
        query = {"objectId": document, "role": role}
        for node in cdp.send("Accessibility.queryAXTree", query)["nodes"]:
            if node.get("name", {}).get("value", "").startswith(name):
                return {p["name"]: p["value"].get("value") for p in node.get("properties", [])}
    finally:
        cdp.detach()
    raise AssertionError(f"no {role} named {name!r} in the accessibility tree")


def test_an_interview_answer_opens_and_closes_with_the_keyboard(browser, server):
    seen = visit(browser, server + CHAPTER_2 + "#interview-questions", wait="load")
    page = seen.page
    tab_until(page, "e.tagName === 'SUMMARY'")
    question = page.evaluate("() => document.activeElement.textContent.trim()")
    answer = page.locator("details.question", has_text=question).locator("p").first
    assert announced(page, "DisclosureTriangle", question)["expanded"] is False
    assert not answer.is_visible()
    page.keyboard.press("Enter")
    assert answer.is_visible()
    assert announced(page, "DisclosureTriangle", question)["expanded"] is True
    page.keyboard.press("Space")
    assert not answer.is_visible()
    assert announced(page, "DisclosureTriangle", question)["expanded"] is False
    page.context.close()


def test_content_tabs_switch_with_the_arrow_keys(browser, server):
    seen = visit(browser, server + "#how-the-pages-are-verified", wait="load")
    page = seen.page
    tab_until(page, "e.matches('.tabbed-set > input[type=radio]')")
    first, second = (page.locator(".tabbed-labels label").nth(i).inner_text() for i in (0, 1))
    blocks = page.locator(".tabbed-set").first.locator(".tabbed-block")
    assert announced(page, "radio", first)["checked"] == "true"
    assert blocks.nth(0).is_visible() and not blocks.nth(1).is_visible()
    page.keyboard.press("ArrowRight")
    assert announced(page, "radio", second)["checked"] == "true"
    assert announced(page, "radio", first)["checked"] == "false"
    assert blocks.nth(1).is_visible() and not blocks.nth(0).is_visible()
    assert page.evaluate("() => document.activeElement.checked")
    page.context.close()


def section_of_first_wide_table(page) -> str:
    """The id of the heading of the section that holds the page's first wide table."""
    return page.evaluate("""() => {
        const table = document.querySelector('.md-typeset__scrollwrap[data-scroll-region]');
        const heads = [...document.querySelectorAll('article :is(h2, h3)[id]')];
        return heads.filter(h => h.compareDocumentPosition(table)
                                 & Node.DOCUMENT_POSITION_FOLLOWING).pop().id; }""")


def test_a_wide_table_is_reached_and_scrolled_with_the_keyboard(browser, server):
    seen = visit(browser, server + "chapters/ch05-attention-at-scale/", viewport=PHONE)
    page = seen.page
    settle(page)
    # Arrive as a reader following a link to the section that holds the first wide table.
    anchor = section_of_first_wide_table(page)
    page.goto(server + f"chapters/ch05-attention-at-scale/#{anchor}")
    settle(page)
    tab_until(page, "e.matches('.md-typeset__scrollwrap')")
    assert announced(page, "region", "Table")["focusable"] is True
    before = page.evaluate("() => document.activeElement.scrollLeft")
    for _ in range(5):
        page.keyboard.press("ArrowRight")
    # Keyboard scrolling is animated: wait for it to move (on a loaded CI machine the
    # animation's frames can take seconds to come).
    page.wait_for_function("x => document.activeElement.scrollLeft > x", arg=before,
                           timeout=30_000)
    page.context.close()


def test_tab_goes_on_from_the_linked_section_after_instant_navigation_replaces_the_page(
        browser, server):
    """The first time the address changes on a page (a link to one of its sections, or Back
    to one), Material's instant navigation fetches the page again and replaces its content,
    taking away the element where the browser's next Tab would start. Material puts the
    reader back at the section only when the fetch comes before its record of the scroll
    position (``history.replaceState``, 100 ms after a scroll), a race a slow machine loses:
    then the next Tab went to the logo, dozens of stops above the section (issue 38, seen
    on Chromium 156 under load). Here the record comes first, as there: the next Tab must
    still land in the section the reader followed the link to, as after a full page load."""
    seen = visit(browser, server + "chapters/ch05-attention-at-scale/", viewport=PHONE)
    page = seen.page
    settle(page)
    anchor = section_of_first_wide_table(page)
    # What has the focus the moment the swap is done, before any frame or key press (an
    # observer created after the site's runs after it): a key pressed then must not go
    # to the logo either.
    page.evaluate("""() => new MutationObserver(records => {
        if (records.some(r => [...r.removedNodes].some(n => n.dataset?.mdComponent
                                                        === 'container')))
            window.focusAtSwap ??= document.activeElement.id || document.activeElement.tagName;
        }).observe(document.body, {childList: true})""")
    old = page.evaluate_handle("""id => { const h = document.getElementById(id);
        h.scrollIntoView();
        location.hash = id;  // the fragment navigation: popstate, and Material's fetch
        history.replaceState({x: 0, y: scrollY}, '');  // the record of the scroll position
        return h; }""", anchor)
    page.wait_for_function("h => !h.isConnected", arg=old, timeout=30_000)  # replaced
    assert page.evaluate("window.focusAtSwap") == anchor
    settle(page)
    page.keyboard.press("Tab")
    assert page.evaluate("id => document.activeElement.closest('h2, h3')?.id", anchor) == anchor, \
        page.evaluate("() => document.activeElement.outerHTML.slice(0, 200)")
    assert not seen.errors
    page.context.close()


def test_every_skip_link_leads_to_its_pages_title(built_site):
    for source, html in built_site.pages.items():
        skip = re.search(r'<a href="#([^"]+)" class="md-skip">', html)
        title = re.search(r'<article class="md-content__inner md-typeset">.*?<h1([^>]*)>',
                          html, re.S)
        if skip and title:
            assert f'id="{skip[1]}"' in title[1], (source.name, skip[1], title[1])


def test_skip_to_content_lands_at_the_top_of_the_article(browser, server):
    """"Skip to content" leads to the chapter's title: the next Tab
    is the chapter's first link, above "What you will learn", where it went to section x.1,
    past the introduction and the first code block (issue 41). The reader comes from the
    home page by instant navigation, as most do (and Material fetches no page twice)."""
    seen = visit(browser, server, wait="load", viewport=DESKTOP)
    page = seen.page
    page.locator('.chapter-list a[href*="ch05-attention-at-scale"]').first.click()
    page.wait_for_function("() => document.querySelector('article h1')?.textContent"
                           ".startsWith('5.')")
    settle(page)
    page.locator("a.md-skip").focus()  # the first stop of Tab on a page loaded afresh
    page.keyboard.press("Enter")
    page.wait_for_function("() => location.hash.length > 1")
    settle(page)
    page.keyboard.press("Tab")
    assert page.evaluate("""() => {
        const e = document.activeElement, title = document.querySelector('article h1');
        const learn = [...document.querySelectorAll('.chapter-facts__title')]
            .find(p => p.textContent === 'What you will learn');
        const box = title.getBoundingClientRect();
        return location.hash === '#' + title.id && box.top >= 0 && box.top < innerHeight
            && !!(title.compareDocumentPosition(e) & Node.DOCUMENT_POSITION_FOLLOWING)
            && !!(e.compareDocumentPosition(learn) & Node.DOCUMENT_POSITION_FOLLOWING); }"""), \
        page.evaluate("() => [location.hash, document.activeElement.outerHTML.slice(0, 120)]")
    assert not seen.errors
    page.context.close()


def luminance(rgb) -> float:
    """WCAG's relative luminance of an sRGB colour given as 0-255 channels."""
    def linear(c):
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (linear(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def focus_change(page, control) -> tuple[int, int]:
    """How the control's look changes when the keyboard focuses it: the pixels, in a box
    4 px wider than the control on each side, whose colour changes with a contrast of 3:1
    or more between the unfocused and the focused look (WCAG 2.4.13's measure), and the
    control's perimeter in pixels, to compare with."""
    page.evaluate("() => document.activeElement.blur()")
    control.scroll_into_view_if_needed()  # the Tab may have scrolled it out of view
    box = control.bounding_box()
    clip = {"x": box["x"] - 4, "y": box["y"] - 4, "width": box["width"] + 8,
            "height": box["height"] + 8}
    before = Image.open(io.BytesIO(page.screenshot(clip=clip, animations="disabled")))
    control.evaluate("e => e.focus()")
    assert control.evaluate("e => e.matches(':focus-visible')")
    after = Image.open(io.BytesIO(page.screenshot(clip=clip, animations="disabled")))
    changed = 0
    unfocused, focused = (image.convert("RGB").tobytes() for image in (before, after))
    for at in range(0, len(unfocused), 3):  # one pixel: r, g, b
        old, new = unfocused[at:at + 3], focused[at:at + 3]
        light, dark = sorted((luminance(old), luminance(new)), reverse=True)
        changed += (light + 0.05) / (dark + 0.05) >= 3
    return changed, round(2 * (box["width"] + box["height"]))


@pytest.mark.parametrize("path, kind", [("chapters/ch01-foundations/", "range"),
                                        ("chapters/ch02-self-attention/", "checkbox"),
                                        ("chapters/ch02-self-attention/", "select")])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_live_figures_control_shows_where_the_keyboard_focus_is(browser, server, path,
                                                                 kind, scheme):
    """Sliders, checkboxes and selects of the live figures show a clear focus indicator
    (WCAG 2.4.7; 2.4.13's size and contrast): Material's reset takes the browser's ring
    away from sliders and checkboxes (issue 41). Measured in pixels: focused against
    unfocused, at least one perimeter of the control changes colour by 3:1 or more."""
    seen = visit(browser, server + path, wait="load", color_scheme=scheme, viewport=DESKTOP)
    page = seen.page
    wait_for_scheme(page, scheme)
    control = page.locator(".live-figure " + (kind if kind == "select" else
                                              f"input[type={kind}]")).first
    control.scroll_into_view_if_needed()
    page.keyboard.press("Tab")  # the reader is on the keyboard: focus shows as it would
    settle(page)
    changed, perimeter = focus_change(page, control)
    assert changed >= perimeter, (kind, scheme, changed, perimeter)
    page.context.close()


def test_a_block_runs_in_the_page_with_the_keyboard_and_says_so(returning_reader, server):
    """Run in the page: Tab to the first block's Run, Enter; the result is announced. As a
    returning reader, whose browser keeps Python compiled (tests/site/conftest.py)."""
    seen = visit_in(returning_reader, server + "#how-the-pages-are-verified", wait="load")
    page = seen.page
    tab_until(page, "e.matches('.run-bar button') && e.textContent === 'Edit'", most=80)
    edit = page.evaluate_handle("() => document.activeElement")
    assert announced(page, "button", "Edit")["pressed"] == "false"
    page.keyboard.press("Space")  # edit the block in place: the caret goes into the code
    assert edit.evaluate("b => b.getAttribute('aria-pressed')") == "true"
    assert page.evaluate("() => document.activeElement.isContentEditable")
    page.keyboard.press("Tab")  # Tab indents in the editor: the focus stays in the code
    assert page.evaluate("() => document.activeElement.isContentEditable")
    page.keyboard.press("Escape")  # Escape leaves the editor: editing ends, focus on Edit
    assert edit.evaluate("b => b === document.activeElement && b.getAttribute('aria-pressed')") == "false"
    page.locator('[data-run-bar] button', has_text="Restore").first.evaluate("b => b.click()")
    edit.evaluate("b => b.focus()")
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("() => document.activeElement.textContent") == "Run"
    bar = page.evaluate_handle("() => document.activeElement.closest('.run-bar')")
    page.keyboard.press("Enter")
    page.wait_for_function("bar => bar.querySelector('[aria-live=polite]').textContent"
                           ".startsWith('Ran in your browser')", arg=bar, timeout=300_000)
    index = bar.evaluate("b => b.dataset.runBar")
    output = page.locator(f'.run-output[data-for="{index}"][role=status]')
    said = bar.evaluate("b => b.querySelector('[aria-live=polite]').textContent")
    # What it printed is in a live region, or the status says it printed nothing.
    assert (output.is_visible() and output.inner_text().strip()) or said.endswith("printed nothing")
    assert not seen.failed and not seen.errors
    page.close()
