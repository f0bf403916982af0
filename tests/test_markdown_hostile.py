"""The Markdown renderer (``web/static/markdown.js``) in a real headless Chromium, on hostile lines.

A reply or a message is rendered on every page load; a renderer that is
quadratic on some line (a long run of ``[``, or ``[a](`` repeated, used to take
seconds at 100 KB) freezes the page for anyone who once received it. So the
time for 200 KB must be about eight times that for 25 KB, never 64 times — a
property of the algorithm, not a benchmark — and links must still render. The
sizes are 8x apart and the garbage collector runs before each render, so a
collection landing in one measurement cannot pass for quadratic growth.
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
# Linear growth is 8x and quadratic 64x; the bound sits far from both. The slack absorbs timer coarsening.
MAX_GROWTH = 20
SLACK_MS = 10.0

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


def render_text_ms(page: Page, text: str) -> float:
    """The best of five renders of ``text``, in milliseconds, the garbage collector run before each."""
    return float(page.evaluate("""(text) => {
        let best = Infinity;
        for (let k = 0; k < 5; k++) {
            window.gc();
            const t = performance.now();
            window.LyraMarkdown.render(text);
            best = Math.min(best, performance.now() - t);
        }
        return best;
    }""", text))


def render_ms(page: Page, unit: str, size: int) -> float:
    """The best of five renders of ``unit`` repeated to ``size`` characters, in milliseconds."""
    return render_text_ms(page, unit * -(-size // len(unit)))


@pytest.mark.parametrize("unit", HOSTILE)
def test_a_hostile_line_renders_in_linear_time(page: Page, unit: str) -> None:
    small = render_ms(page, unit, SMALL)
    large = render_ms(page, unit, LARGE)
    assert large < MAX_GROWTH * small + SLACK_MS, f"{unit!r}: 25 KB {small:.1f} ms, 200 KB {large:.1f} ms"
    assert large < 2000


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
