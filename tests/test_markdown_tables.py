"""Tables, heading sizes and code blocks' Copy button in the Markdown renderer (``web/static/markdown.js``
with ``markdown.css``), in a real headless Chromium.

The page is served from ``http://localhost`` (a secure context, where ``navigator.clipboard`` exists)
and styled with app.css and markdown.css, the reply in a bubble as the app shows it. A page on
``about:blank`` has no clipboard API, like the app over plain http on the LAN: the fallback copies there.
Hostile tables must render in linear time: growth against a linear reference, as test_markdown_hostile.py.
A screenshot of a reply goes to test-output/screenshots/markdown-table.png for a person to look at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, sync_playwright

from .conftest import REPO
from .test_markdown_hostile import MAX_RELATIVE_GROWTH, relative_growth, rendered
from .test_web_ui import SHOTS, chromium

STATIC = REPO / "lyra_local" / "web" / "static"
PAGE = """<!doctype html><html><head><meta charset="utf-8"></head><body>
<main class="chat"><ol class="messages"><li class="message assistant"><span class="who">Lyra</span>
<div class="bubble" id="out"></div></li></ol></main></body></html>"""

pytestmark = pytest.mark.slow


def load(page: Page) -> None:
    page.add_style_tag(path=str(STATIC / "app.css"))
    page.add_style_tag(path=str(STATIC / "markdown.css"))
    page.add_script_tag(path=str(STATIC / "markdown.js"))


@pytest.fixture(scope="module")
def context() -> Iterator[BrowserContext]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--js-flags=--expose-gc"])
        context = browser.new_context(permissions=["clipboard-read", "clipboard-write"],
                                      viewport={"width": 1000, "height": 800})
        context.route("http://localhost/**", lambda route: route.fulfill(content_type="text/html", body=PAGE))
        yield context
        browser.close()


@pytest.fixture(scope="module")
def page(context: BrowserContext) -> Iterator[Page]:
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto("http://localhost/")
    load(page)
    yield page
    assert errors == []


def show(page: Page, source: str, script: str) -> Any:
    """``source`` rendered into the bubble, then ``script`` (a function of the bubble) run on it."""
    return page.evaluate(f"""(source) => {{
        const out = document.getElementById('out');
        out.replaceChildren(window.LyraMarkdown.render(source));
        return ({script})(out);
    }}""", source)


CELLS = """(out) => [...out.querySelectorAll('tr')].map((tr) => [...tr.children].map((c) =>
    [c.tagName.toLowerCase(), c.className, c.colSpan, c.innerHTML]))"""


def test_a_table_renders_with_its_alignment_and_inline_markdown(page: Page) -> None:
    source = ("Scores:\n| Name | Role | Score |\n|:-----|:----:|------:|\n"
              "| `lyra` | **companion** | 9 |\n| [docs](https://example.org) | *x* | 10 |\n\nafter")
    html = rendered(page, source)
    assert html.startswith('<p>Scores:</p><div class="table-wrap"><table><thead><tr>')
    assert html.endswith("</tbody></table></div><p>after</p>")
    rows = show(page, source, CELLS)
    assert rows[0] == [["th", "align-left", 1, "Name"], ["th", "align-center", 1, "Role"],
                       ["th", "align-right", 1, "Score"]]
    assert rows[1] == [["td", "align-left", 1, "<code>lyra</code>"], ["td", "align-center", 1,
                        "<strong>companion</strong>"], ["td", "align-right", 1, "9"]]
    assert rows[2][0][3] == ('<a href="https://example.org" rel="noopener noreferrer nofollow" target="_blank">'
                             "docs</a>") and rows[2][1][3] == "<em>x</em>"


def test_end_pipes_are_optional_and_an_escaped_pipe_stays_in_its_cell(page: Page) -> None:
    rows = show(page, "a | b\n--|--\n`x \\| y` | c \\| d\n|e|f|", CELLS)
    assert rows == [[["th", "", 1, "a"], ["th", "", 1, "b"]],
                    [["td", "", 1, "<code>x | y</code>"], ["td", "", 1, "c | d"]],
                    [["td", "", 1, "e"], ["td", "", 1, "f"]]]


def test_short_rows_are_padded_and_extra_cells_dropped(page: Page) -> None:
    rows = show(page, "| a | b | c |\n|---|---|--:|\n| 1 |\n| 1 | 2 | 3 | 4 | 5 |\nonly text", CELLS)
    assert rows[1] == [["td", "", 1, "1"], ["td", "", 1, ""], ["td", "align-right", 1, ""]]
    assert rows[2] == [["td", "", 1, "1"], ["td", "", 1, "2"], ["td", "align-right", 1, "3"]]
    assert rows[3] == [["td", "", 1, "only text"], ["td", "", 1, ""], ["td", "align-right", 1, ""]]  # as GitHub
    # More missing cells than the row has characters: one cell spans them (a hostile table stays linear)
    wide = show(page, "|a" * 10 + "|\n" + "|-" * 10 + "|\n|\n|1|", CELLS)
    assert wide[1] == [["td", "", 10, ""]] and wide[2] == [["td", "", 1, "1"], ["td", "", 9, ""]]


@pytest.mark.parametrize(("source", "html"), [
    ("a | b\nc | d", "<p>a | b<br>c | d</p>"),
    ("| a | b |\n|---|", "<p>| a | b |<br>|---|</p>"),  # the delimiter row must be as wide as the header
    ("| a | b |\n| - | x |", "<p>| a | b |<br>| - | x |</p>"),
    ("a | b\n---", "<p>a | b<br>---</p>"),  # a delimiter row has a "|"
    ("| a |\n> |---|", "<p>| a |</p><blockquote><p>|---|</p></blockquote>"),
    ("x \\| y\n-|-", "<p>x \\| y<br>-|-</p>"),  # no unescaped "|": no header
    ("|\n|-|", "<p>|<br>|-|</p>"),  # a header of no cells
    ("|a" * 65 + "|\n" + "|-" * 65 + "|", f"<p>{'|a' * 65}|<br>{'|-' * 65}|</p>"),  # wider than Chromium lays out
])
def test_a_line_with_pipes_but_no_delimiter_row_under_it_stays_a_paragraph(page: Page, source: str,
                                                                            html: str) -> None:
    assert rendered(page, source) == html


@pytest.mark.parametrize(("after", "then"), [("\n\nnext", "<p>next</p>"), ("\n> quoted", "<blockquote>"),
                                             ("\n# title", "<h3>title</h3>"), ("\n- item", "<ul><li>item"),
                                             ("\n```\ncode\n```", '<div class="code-block"><pre>')])
def test_a_table_ends_at_a_blank_line_or_another_block(page: Page, after: str, then: str) -> None:
    html = rendered(page, "|a|b|\n|-|-|\n|1|2|" + after)
    assert html.count("<tr>") == 2 and html.split("</table></div>")[1].startswith(then)


def test_a_table_inside_a_quote(page: Page) -> None:
    html = rendered(page, "> | a | b |\n> |---|---|\n> | 1 | 2 |\nafter")
    assert html.startswith('<blockquote><div class="table-wrap"><table>') and html.count("<td>") == 2
    assert html.endswith("</table></div></blockquote><p>after</p>")


def test_a_wide_table_scrolls_inside_the_bubble(page: Page) -> None:
    source = "|" + "|".join(f"column {k}" for k in range(40)) + "|\n" + "|---" * 40 + "|\n" + "| word " * 40
    found = show(page, source, """(out) => {
        const wrap = out.querySelector('.table-wrap');
        return { bubble: out.getBoundingClientRect().width, wrap: wrap.clientWidth, table: wrap.scrollWidth,
                 page: document.documentElement.scrollWidth, view: window.innerWidth,
                 cell: wrap.querySelector('td').getBoundingClientRect().height };
    }""")
    assert found["bubble"] <= 640 and found["table"] > 2 * found["wrap"] and found["page"] <= found["view"]
    assert found["cell"] < 40  # one line a cell: words are not broken letter by letter


def build_rows(header: str, delimiter: str, row: str) -> Callable[[int], str]:
    return lambda n: f"{header}\n{delimiter}\n" + row * n


# Each builds a text of about ``n`` pipes, columns or rows; SMALL and LARGE are 8x apart.
HOSTILE: dict[str, Callable[[int], str]] = {
    "100,000 pipes on a line": lambda n: "|" * n,
    "escaped pipes": lambda n: "\\|" * n,
    "pipes and spaces": lambda n: "| " * n,
    "header and delimiter as wide": lambda n: "|a" * n + "\n" + "|:-:" * n,
    "too wide a header over rows of '|'": lambda n: "|a" * n + "\n" + "|-" * n + "\n" + "|\n" * n,
    "the widest table over rows of '|'": lambda n: "|a" * 64 + "\n" + "|-" * 64 + "\n" + "|\n" * n,
    "50,000 rows": build_rows("| x | y | z |", "|---|:-:|--:|", "| a | `b` | **c** |\n"),
    "rows of delimiters": lambda n: "|-|\n" * n,
    "pipe lines, no delimiter": lambda n: "a|b\n" * n,
    "delimiters of the wrong width": lambda n: "a|b\n-|-|-\n" * n,
    "long cells": lambda n: "|" + "a" * n + "|\n|" + "-" * n + "|\n|" + "`b " * n + "|",
}
SMALL, LARGE = 6_250, 50_000


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_tables_render_in_linear_time(page: Page, name: str) -> None:
    growth, best = relative_growth(page, HOSTILE[name](SMALL), HOSTILE[name](LARGE))
    print(f"{name}: {growth:.2f}x the reference's growth")
    assert growth < MAX_RELATIVE_GROWTH, f"{name}: {growth:.1f}x the reference's growth; best ms {best}"


def test_the_widest_table_over_50_000_rows_lays_out(page: Page) -> None:
    found = show(page, HOSTILE["the widest table over rows of '|'"](LARGE), """(out) =>
        [out.querySelector('tr').children.length, out.querySelectorAll('tr').length, out.offsetHeight]""")
    assert found[:2] == [64, 1 + LARGE] and found[2] > 0


def test_headings_are_scaled_against_the_body_text(page: Page) -> None:
    sizes = show(page, "# one\n## two\n### three\n#### four\n###### six\n\nbody text", """(out) =>
        [...out.children].map((n) => [n.tagName.toLowerCase(), parseFloat(getComputedStyle(n).fontSize),
                                      Number(getComputedStyle(n).fontWeight)])""")
    assert [tag for tag, _, _ in sizes] == ["h3", "h4", "h5", "h6", "h6", "p"]
    body = sizes[-1][1]
    assert sizes[0][1] > sizes[1][1] > sizes[2][1] > body  # "#" larger than "##", larger than body text
    assert sizes[0][1] >= 1.3 * body
    assert sizes[3][1] == sizes[4][1] == body and sizes[3][2] >= 600  # smaller ones: bold at body size


def copy_button(page: Page) -> str:
    """Clicks the first code block's Copy button; what it says next (noted when it changes: it says it
    for only 1.5 s, which a loaded machine can let pass between two polls)."""
    page.evaluate("""() => {
        const button = document.querySelector('#out .copy-code');
        window.said = null;
        new MutationObserver((_, observer) => { window.said = button.textContent; observer.disconnect(); })
            .observe(button, { childList: true, characterData: true, subtree: true });
    }""")
    page.click("#out .copy-code", force=True)  # force: it is faint until hovered, and clickable all along
    return str(page.wait_for_function("window.said").json_value())


def test_the_copy_button_puts_the_code_on_the_clipboard(page: Page) -> None:
    code = "def f(x):\n    return x | 1  # <b>not html</b>"
    markup = show(page, f"Here:\n```python\n{code}\n```", """(out) => out.querySelector('.code-block').outerHTML""")
    assert markup.startswith('<div class="code-block"><pre><code data-lang="python">')
    assert markup.endswith('</code></pre><button type="button" class="copy-code" aria-label="Copy code">'
                           "Copy</button></div>")
    assert copy_button(page) == "Copied"
    assert page.evaluate("navigator.clipboard.readText()") == code
    page.wait_for_function("document.querySelector('#out .copy-code').textContent === 'Copy'", timeout=4000)
    assert page.get_attribute("#out .copy-code", "aria-label") == "Copy code"


def test_without_the_clipboard_api_the_copy_button_still_copies(context: BrowserContext, page: Page) -> None:
    plain = context.new_page()  # about:blank: no secure context, no navigator.clipboard, as over plain http
    try:
        plain.set_content(PAGE)
        load(plain)
        assert plain.evaluate("navigator.clipboard === undefined")
        show(plain, "```\nfrom the fallback\n```", "() => null")
        assert copy_button(plain) == "Copied"
    finally:
        plain.close()
    page.bring_to_front()
    assert page.evaluate("navigator.clipboard.readText()") == "from the fallback"


REPLY = """## Trip plan

Here is what the three options cost, **per person**:

| City | Nights | Train | Total |
|:-----|:------:|------:|------:|
| Porto | 3 | `€48` | €312 |
| Lisbon | 4 | `€35` | €396 |
| Coimbra \\| Aveiro | 2 | — | €140 |

### The script I used

```python
prices = {"Porto": 312, "Lisbon": 396}
cheapest = min(prices, key=prices.get)
print(f"cheapest: {cheapest}")
```

Lisbon has the most to see; Porto is the best value."""


def test_screenshot_of_a_reply_with_a_table_and_a_code_block(page: Page) -> None:
    show(page, REPLY, "() => null")
    page.hover("#out .code-block")  # the Copy button shows
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(".message.assistant").screenshot(path=str(SHOTS / "markdown-table.png"))
    assert (SHOTS / "markdown-table.png").stat().st_size > 0
