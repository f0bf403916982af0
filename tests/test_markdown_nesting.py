"""Deep nesting in the Markdown renderer (``web/static/markdown.js``), in a real headless Chromium.

A reply of 5,000 nested ``>`` (an imported one, say) made the renderer recurse
until ``RangeError``: the conversation showed no messages at all; it was also
quadratic (2 s for 5,000). The renderer keeps its levels on a stack now, and
past a depth a ``>`` stays text (a tree thousands deep crashes Chromium's
layout, so the page is laid out here too). Going from 5,000 to 40,000 must cost
what it costs the linear reference of test_markdown_hostile.py, whose page and
comparison this reuses, never eight times more.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from . import test_markdown_hostile as hostile
from .test_markdown_hostile import MAX_RELATIVE_GROWTH, relative_growth, rendered, repeat

page = hostile.page  # the fixture: one Chromium page with markdown.js, for this module

pytestmark = pytest.mark.slow

DEPTHS = (5_000, 40_000)
NESTING = [">", "> ", " >", " > ", ">\t", "> - ", "- > ", "> 1. "]
# Quotes, lists and fences nested and closed again within the depth kept, many times over: each a level
# pushed and popped.
STAIRS = "\n".join(">" * k + " step" for k in (*range(1, 40), *range(40, 0, -1))) + "\n\n"
BLOCKS = ["> a\n>> b\n>>> c\n\nd\n", "> - a\n> > - b\n> > > 1. c\n", "> ```\n> code\n```\n", STAIRS,
          " " * 500 + "- deep\n", "  " * 60 + "1. x\n" + "    - y\n"]


def shown(page: Page, source: str) -> dict[str, int]:
    """``source`` rendered into the page and laid out: how deep its quotes go, its ``>`` left as text."""
    return dict(page.evaluate("""(source) => {
        const out = document.getElementById('out');
        out.replaceChildren(window.LyraMarkdown.render(source));
        let depth = 0;
        for (let n = out.querySelector('blockquote'); n; n = n.querySelector(':scope > blockquote')) depth++;
        return { depth, height: out.offsetHeight, marks: (out.textContent.match(/>/g) || []).length };
    }""", source))


# What the recursive renderer gave for these (read from it before it was made iterative); since then
# "#" is h3, not h4, and a code block comes in a div with its Copy button (test_markdown_tables.py).
COPY = '<button type="button" class="copy-code" aria-label="Copy code">Copy</button></div>'
AS_BEFORE = {
    "> a\n>> b\n> c\n\nd": "<blockquote><p>a</p><blockquote><p>b</p></blockquote><p>c</p></blockquote><p>d</p>",
    "> - x\n> > **y**\n```\n> z\n```": "<blockquote><ul><li>x</li></ul><blockquote><p><strong>y</strong></p>"
                                      '</blockquote></blockquote><div class="code-block"><pre><code>&gt; z'
                                      "</code></pre>" + COPY,
    "> ```\n> code\n```\nafter": '<blockquote><div class="code-block"><pre><code>code</code></pre>' + COPY
                                + '</blockquote><div class="code-block"><pre><code>after</code></pre>' + COPY,
    "> a\n>> b\n\n> c": "<blockquote><p>a</p><blockquote><p>b</p></blockquote></blockquote>"
                        "<blockquote><p>c</p></blockquote>",
    ">> # h\n> 1. one\n> 2. two\n>\n> para `code`\n>> [l](https://x.org)":
        '<blockquote><blockquote><h3>h</h3></blockquote><ol><li>one</li><li>two</li></ol><p>para <code>code</code>'
        '</p><blockquote><p><a href="https://x.org" rel="noopener noreferrer nofollow" target="_blank">l</a></p>'
        "</blockquote></blockquote>",
}


@pytest.mark.parametrize("source", AS_BEFORE)
def test_ordinary_nested_quotes_render_as_before(page: Page, source: str) -> None:
    assert rendered(page, source) == AS_BEFORE[source]


@pytest.mark.parametrize("unit", NESTING)
@pytest.mark.parametrize("count", DEPTHS)
def test_deeply_nested_quotes_render_and_lay_out_without_error(page: Page, unit: str, count: int) -> None:
    found = shown(page, unit * count + "deep")
    assert found["height"] > 0
    if unit.strip() == ">":  # quotes as deep as a person can read, the rest as text: nothing lost
        assert found["depth"] == 32 and found["marks"] == count - 32


@pytest.mark.parametrize("unit", NESTING)
def test_nesting_renders_in_linear_time(page: Page, unit: str) -> None:
    growth, best = relative_growth(page, repeat(unit, DEPTHS[0] * len(unit)), repeat(unit, DEPTHS[1] * len(unit)))
    assert growth < MAX_RELATIVE_GROWTH, f"{unit!r}: {growth:.1f}x the reference's growth; best ms {best}"


@pytest.mark.parametrize("unit", BLOCKS)
def test_nested_blocks_many_times_over_render_in_linear_time(page: Page, unit: str) -> None:
    growth, best = relative_growth(page, repeat(unit, 25_000), repeat(unit, 200_000))
    assert growth < MAX_RELATIVE_GROWTH, f"{unit!r}: {growth:.1f}x the reference's growth; best ms {best}"
