"""The Markdown renderer (``web/static/markdown.js``) in a real headless Chromium, on hostile lines.

A reply or a message is rendered on every page load; a renderer that is
quadratic on some line (a long run of ``[``, or ``[a](`` repeated, can take
seconds at 100 KB) freezes the page for anyone who once received it. So going
from 25 KB to 200 KB of a hostile line must cost about what it costs for plain
prose of the same sizes (eight times), never the 64 times of a quadratic
renderer. Growth is compared with that linear reference measured in the same
page and run, interleaved, the best of seven each, the garbage collector run
before each render: a loaded machine slows both alike, so load cannot fail the
test, and no absolute time is asserted (timings belong in benchmarks).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, sync_playwright

from .conftest import REPO
from .test_web_ui import chromium

MARKDOWN_JS = REPO / "lyra_local" / "web" / "static" / "markdown.js"
HOSTILE = ["[", "[a](", "[a](b", "[a]", "](", "[[a](b)", "[**", "**[a](", "`a", "*a", "_a", "**a",
           "http://(", "[a](http://x/(", "- [", "> [", "``` ", " "]
SMALL, LARGE = 25_000, 200_000
REFERENCE = "- a line of *plain* words with `code` and a [link](http://x)\n"  # a list: linear, and real work
# Linear growth is the reference's (about 8x) and quadratic 8x more again; the bound sits far from both.
MAX_RELATIVE_GROWTH = 3.0

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def page() -> Iterator[Page]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--js-flags=--expose-gc"])
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.set_content("<!doctype html><html><body><div id='out'></div></body></html>")
        page.add_script_tag(path=str(MARKDOWN_JS))
        yield page
        assert errors == []
        browser.close()


def relative_growth(page: Page, small: str, large: str) -> tuple[float, list[float]]:
    """How much faster rendering grows from ``small`` to ``large`` than for the linear reference of the same
    sizes: 1 is linear, 8 quadratic. With the four best times (ms: small, large, reference small, large)."""
    best = page.evaluate("""([texts]) => {
        const best = texts.map(() => Infinity);
        for (let round = 0; round < 7; round++) {
            texts.forEach((text, k) => {
                window.gc();
                const t = performance.now();
                window.LyraMarkdown.render(text);
                best[k] = Math.min(best[k], performance.now() - t);
            });
        }
        return best;
    }""", [[small, large, repeat(REFERENCE, len(small)), repeat(REFERENCE, len(large))]])
    tick = 0.1  # ms: Chromium's timer resolution; a render that takes less cannot be divided by
    small_ms, large_ms, ref_small, ref_large = (max(t, tick) for t in best)
    return (large_ms / small_ms) / (ref_large / ref_small), list(best)


def repeat(unit: str, size: int) -> str:
    return unit * -(-size // len(unit))


@pytest.mark.parametrize("unit", HOSTILE)
def test_a_hostile_line_renders_in_linear_time(page: Page, unit: str) -> None:
    growth, best = relative_growth(page, repeat(unit, SMALL), repeat(unit, LARGE))
    print(f"{unit!r}: {growth:.2f}x the reference's growth")
    assert growth < MAX_RELATIVE_GROWTH, f"{unit!r}: {growth:.1f}x the reference's growth; best ms {best}"


def rendered(page: Page, source: str) -> str:
    return str(page.evaluate("""(source) => {
        const out = document.getElementById('out');
        out.replaceChildren(window.LyraMarkdown.render(source));
        return out.innerHTML;
    }""", source))


def test_links_still_render(page: Page) -> None:
    html = rendered(page, "see [the docs](https://example.org/a) and https://example.com/x ok")
    assert '<a href="https://example.org/a"' in html and ">the docs</a>" in html
    assert '<a href="https://example.com/x"' in html and ">https://example.com/x</a> ok" in html


def test_a_link_after_a_run_of_brackets_still_renders(page: Page) -> None:
    html = rendered(page, "[" * 10_000 + "[label](https://example.org)")
    assert html.count("<a ") == 1 and '<a href="https://example.org"' in html and ">label</a>" in html


def test_a_bare_url_inside_a_label_is_not_a_second_link(page: Page) -> None:
    html = rendered(page, "[**see** https://inner.example](https://outer.example)")
    assert html.count("<a ") == 1 and "<strong>see</strong> https://inner.example</a>" in html


def test_unsafe_links_stay_text(page: Page) -> None:
    html = rendered(page, "[x](javascript:alert(1)) <img src=x onerror=alert(1)>")
    assert "<a " not in html and "<img" not in html and "x (javascript:alert(1)" in html
