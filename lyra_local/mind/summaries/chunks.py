"""Token-sized chunking: pure functions, so they are tested without a model.

Every size is in tokens of the summary model's own tokenizer (``count``), and
budgets come from that model's context length, never from characters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Count = Callable[[str], int]
SEPARATOR = "\n"
SEPARATOR_TOKENS = 1


def input_budget(n_ctx: int, reply_tokens: int, instructions: str, count: Count, margin: int = 48) -> int:
    """Tokens left for the material of one request, after the instructions, the reply and the template."""
    return max(32, n_ctx - reply_tokens - count(instructions) - margin)


def split_to(text: str, limit: int, count: Count) -> list[str]:
    """``text`` cut into pieces of at most ``limit`` tokens, at whitespace where possible."""
    pieces: list[str] = []
    rest = text
    while rest:
        if count(rest) <= limit:
            pieces.append(rest)
            break
        lo, hi = 1, len(rest)
        while lo < hi:  # the longest prefix within the limit
            mid = (lo + hi + 1) // 2
            if count(rest[:mid]) <= limit:
                lo = mid
            else:
                hi = mid - 1
        cut = rest.rfind(" ", 0, lo)
        cut = cut if cut > lo // 2 else lo
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    return [p for p in pieces if p]


def pack(texts: Sequence[str], budget: int, count: Count) -> list[list[str]]:
    """Consecutive texts grouped into chunks of at most ``budget`` tokens; oversized texts are split."""
    chunks: list[list[str]] = []
    current: list[str] = []
    used = 0
    for text in texts:
        size = count(text)
        parts = [text] if size <= budget else split_to(text, budget, count)
        for part in parts:
            cost = (size if len(parts) == 1 else count(part)) + SEPARATOR_TOKENS
            if current and used + cost > budget:
                chunks.append(current)
                current, used = [], 0
            current.append(part)
            used += cost
    if current:
        chunks.append(current)
    return chunks
