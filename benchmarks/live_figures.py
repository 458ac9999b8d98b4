"""How long a live figure takes to follow its control: from the change to the redrawn SVG.

    python benchmarks/live_figures.py                # builds the site into a temporary folder
    python benchmarks/live_figures.py --site site    # an already built site
    python benchmarks/live_figures.py --rounds 9

A benchmark, not a test: the numbers belong to this machine and its load. The site is
served as the browser tests serve it (tests/site/browsing.py) and read in one tab of the
tests' browser; on each page with a live figure (docs/javascripts/live-figures.js),
every figure is started (the runtime's download and start are not counted), then each
of its controls is changed ``--rounds`` times, one step at a time (one arrow key on a
slider, the next option of a select, a click on a checkbox, another prompt in the text
box, never one seen before: the figure caches a prompt's weights). Each change is timed by the page itself, from the input event to the end of the
redraw (``data-draw-ms``: the values sent to the worker, the package's figure function
in Pyodide, the JSON back, the SVG built and inserted). It prints the median and the
largest time per figure and control, and the load average (1 min) before and after.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from attention.interactive import FIGURES  # noqa: E402
from tests.site.browsing import CHROMIUM_ARGS, SiteHandler, find_browser  # noqa: E402
from tests.site.test_live_figures import SETTLED, pages_with_live_figures  # noqa: E402

PROMPTS = ("A transformer block reads every token.", "The keys and the values are cached.")


def serve(site: Path) -> str:
    """Serve ``site`` at its /attention-from-scratch/ path; the local address."""
    handler = type("Handler", (SiteHandler,), {"site_url": "/attention-from-scratch/"})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                            functools.partial(handler, directory=str(site)))
    handler.local_url = f"http://127.0.0.1:{httpd.server_address[1]}/attention-from-scratch/"
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return handler.local_url


def change(page, box, name: str, control, i: int) -> None:
    """One step of ``control``, the i-th change: back and forth, so every value is legal."""
    field = box.query_selector(f'[name="{name}"]')
    kind = field.evaluate("f => f.type")
    if kind == "range":
        at_top = field.evaluate("f => Number(f.value) >= Number(f.max)")
        at_bottom = field.evaluate("f => Number(f.value) <= Number(f.min)")
        field.focus()
        page.keyboard.press("ArrowLeft" if at_top or (i % 2 and not at_bottom)
                            else "ArrowRight")
    elif kind == "checkbox":
        field.click()
    elif kind.startswith("select"):
        options = field.evaluate("f => [...f.options].map(o => o.value)")
        now = field.evaluate("f => f.value")
        field.select_option(options[(options.index(now) + 1) % len(options)])
    else:
        field.fill(f"{PROMPTS[i % 2]} ({i})")  # a new prompt each time: none is cached


def measure(base: str, rounds: int) -> list[tuple[str, str, list[float]]]:
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=find_browser().path,
                                         args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for source, names in pages_with_live_figures().items():
            address = "chapters/" + Path(source).stem + "/"
            page.goto(base + address, wait_until="load")
            for name in names:
                box = page.wait_for_selector(f'.live-figure[data-figure="{name}"]:not([hidden])')

                def redraw(act):
                    draws = int(box.get_attribute("data-draws") or 0)
                    act()
                    page.wait_for_function(SETTLED, arg=[box, draws], timeout=120_000)
                    return float(box.get_attribute("data-draw-ms"))

                redraw(lambda: box.query_selector(".live-figure__start").click())
                for control in FIGURES[name].controls:
                    times = [redraw(lambda: change(page, box, control.name, control, i))
                             for i in range(rounds)]
                    rows.append((name, control.name, times))
        browser.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, help="a built site (default: build one)")
    parser.add_argument("--rounds", type=int, default=7, help="changes per control")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site
        if site is None:
            site = Path(tmp) / "site"
            subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                            "-d", str(site)], cwd=ROOT, check=True,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
        rows = measure(serve(site), args.rounds)
    print(f"control change to redrawn figure, {args.rounds} changes each "
          f"(load average {load:.2f} before, {os.getloadavg()[0]:.2f} after)")
    print(f"| {'figure':26} | {'control':11} | median ms | largest ms |")
    print(f"|{'-' * 28}|{'-' * 13}|----------:|-----------:|")
    for name, control, times in rows:
        print(f"| {name:26} | {control:11} | {statistics.median(times):9.1f} | "
              f"{max(times):10.1f} |")


if __name__ == "__main__":
    main()
