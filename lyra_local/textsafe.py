"""Text from outside (a request body, an import file, an MCP call) made storable. A pure function.

JSON may carry a lone UTF-16 surrogate (``"\\ud800"``: a string cut in the middle
of an emoji by a client); Python decodes it into a ``str`` that SQLite and
every UTF-8 response then refuse to encode, so the turn would fail after the
request was accepted. A lone surrogate is not a character: it
becomes U+FFFD (the replacement character), the rest of the text is kept as is.
Every other code point, NUL and control characters included, is stored
unchanged: they are the person's text.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD; the same object when it has none."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(REPLACEMENT, text)
    return text

