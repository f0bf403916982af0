"""Context assembly: the prompt in layers, each within a token budget. A pure function (its state lives
in one ``_Prompt`` per call).

Layers, in order: persona -> self-state and drives -> the household memory (what the people of the
household chose to share with everyone) -> world state -> profile ->
narrative -> temporal digests (the timeline ladder) -> gists of other sessions -> sharp raw turns from
other sessions -> the session's gist (when its older turns no longer fit) ->
its recent turns -> the new message. Every budget is in tokens of the chat
model's own tokenizer (passed in as ``count``), so the total fits whatever model
is configured. A memory that appears in an earlier layer is not repeated.

No I/O here: ``gather.py`` collects the inputs; this decides what goes in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..llm.base import Message
from .timeline import Entry, render_timeline

Count = Callable[[str], int]
MESSAGE_OVERHEAD = 8  # chat-template tokens around each message (role markers, separators)
ELLIPSIS = " …"


@dataclass(frozen=True)
class Item:
    """One memory offered to a layer, best first."""

    kind: str
    id: int
    text: str
    score: float = 0.0
    stage: str = ""
    when: str = ""


@dataclass(frozen=True)
class Turn:
    id: int
    role: str
    content: str


@dataclass(frozen=True)
class Shares:
    """Each layer's share of the prompt budget; the recent turns get what is left."""

    persona: float = 0.12
    self_state: float = 0.05
    household: float = 0.06
    world: float = 0.12
    profile: float = 0.08
    narrative: float = 0.06
    digests: float = 0.08
    gists: float = 0.08
    recalled: float = 0.10


@dataclass(frozen=True)
class ContextInputs:
    message: str
    persona: str
    user_name: str | None = None
    self_state: dict[str, Any] | None = None
    drives: dict[str, float] | None = None
    household: str | None = None
    world: str | None = None
    profile: Sequence[tuple[str, str]] = ()
    narrative: str | None = None
    timeline: Sequence[Entry] = ()
    gists: Sequence[Item] = ()
    recalled: Sequence[Item] = ()
    session_gist: Item | None = None
    recent: Sequence[Turn] = ()


@dataclass(frozen=True)
class TraceEntry:
    """Which memory went into the context, from which layer, and why: "why did you say that?"."""

    layer: str
    kind: str
    id: int
    score: float
    stage: str


@dataclass
class Context:
    messages: list[Message]
    trace: list[TraceEntry] = field(default_factory=list)
    tokens: int = 0
    layer_tokens: dict[str, int] = field(default_factory=dict)
    message_truncated: bool = False


def truncate_to(text: str, limit: int, count: Count) -> str:
    """The longest prefix of ``text`` within ``limit`` tokens (binary search on characters)."""
    if limit <= 0:
        return ""
    if count(text) <= limit:
        return text
    room = limit - count(ELLIPSIS)
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[:mid]) <= room:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + ELLIPSIS if lo else ""


def assemble(inputs: ContextInputs, *, count: Count, n_ctx: int, reply_tokens: int,
             shares: Shares = Shares()) -> Context:
    """Build the prompt; the total never exceeds ``n_ctx - reply_tokens``."""
    total = max(0, n_ctx - reply_tokens)
    # The new message comes first: it may take up to half the budget, truncated with a notice.
    message = truncate_to(inputs.message, max(16, total // 2) - MESSAGE_OVERHEAD, count)
    truncated = message != inputs.message
    if truncated:
        message += "\n[the message was cut here to fit the model's context]"
    used = count(message) + MESSAGE_OVERHEAD
    prompt = _Prompt(total, max(0, total - used - MESSAGE_OVERHEAD), count)  # less the system message's overhead
    _add_memories(prompt, inputs, shares)
    kept = prompt.add_session(inputs.recent, inputs.session_gist)

    messages: list[Message] = [{"role": "system", "content": "\n\n".join(prompt.sections)}]
    messages += [{"role": "assistant" if t.role == "assistant" else "user", "content": t.content} for t in kept]
    messages.append({"role": "user", "content": message})
    tokens = _fit(messages, prompt.trace, count, total)
    return Context(messages, prompt.trace, tokens, prompt.layer_tokens, truncated)


def _add_memories(prompt: _Prompt, inputs: ContextInputs, shares: Shares) -> None:
    """Every layer above the current session, in order, each within its share."""
    prompt.add_text("persona", inputs.persona, shares.persona)
    prompt.add_text("self_state", _self_state_text(inputs), shares.self_state)
    prompt.add_text("household", inputs.household and "Shared by everyone in the household:\n" + inputs.household,
                    shares.household)
    prompt.add_text("world", inputs.world and "Core memory (the world as it stands):\n" + inputs.world,
                    shares.world)
    if inputs.profile:
        who = inputs.user_name or "the user"
        prompt.add_text("profile",
                        f"What you know about {who}:\n" + "\n".join(f"- {k}: {v}" for k, v in inputs.profile),
                        shares.profile)
    prompt.add_text("narrative", inputs.narrative and "The current arc:\n" + inputs.narrative, shares.narrative)
    title = "From your timeline:"
    room = prompt.budget(shares.digests) - prompt.count(title) - 1
    timeline = [Item("digest", e.id, e.text, 0.0, "timeline", e.period)
                for e in render_timeline(inputs.timeline, room, prompt.count)] if room > 0 else []
    prompt.add_items("digests", title, timeline, shares.digests)
    prompt.add_items("gists", "Related past conversations:", inputs.gists, shares.gists)
    prompt.add_items("recalled", "Moments you remember:", inputs.recalled, shares.recalled)


class _Prompt:
    """The system message as it is built: what is left of the budget, the memories already in it (none is
    repeated), and the trace of why each is there. One per ``assemble`` call."""

    def __init__(self, total: int, available: int, count: Count) -> None:
        self.total = total
        self.available = available
        self.count = count
        self.seen: set[tuple[str, int]] = set()
        self.seen_text: set[str] = set()
        self.trace: list[TraceEntry] = []
        self.layer_tokens: dict[str, int] = {}
        self.sections: list[str] = []

    def budget(self, share: float) -> int:
        """A layer's tokens: its share of the whole, or what is left if that is less."""
        return min(self.available, int(self.total * share))

    def add_text(self, layer: str, text: str | None, share: float) -> None:
        if not text or self.available <= 0:
            return
        body = truncate_to(text, self.budget(share), self.count)
        if body:
            cost = self.count(body) + 1
            self.sections.append(body)
            self.layer_tokens[layer] = cost
            self.available -= cost

    def add_items(self, layer: str, title: str, items: Sequence[Item], share: float) -> None:
        budget = self.budget(share)
        lines = []
        spent = self.count(title) + 1
        for item in items:
            key = (item.kind, item.id)
            norm = " ".join(item.text.split()).lower()
            if key in self.seen or norm in self.seen_text:
                continue
            line = f"- {item.when + ': ' if item.when else ''}{item.text}"
            cost = self.count(line) + 1
            if spent + cost > budget:
                continue  # a shorter item further down may still fit
            lines.append(line)
            spent += cost
            self.seen.add(key)
            self.seen_text.add(norm)
            self.trace.append(TraceEntry(layer, item.kind, item.id, item.score, item.stage))
        if lines:
            self.sections.append(title + "\n" + "\n".join(lines))
            self.layer_tokens[layer] = spent
            self.available -= spent

    def add_session(self, recent: Sequence[Turn], gist: Item | None) -> list[Turn]:
        """The current session: its newest turns that fit what is left, and its gist standing in for the older
        ones (when it fits, in place of the oldest kept turns); the turns kept, oldest first."""
        room = self.available
        kept: list[Turn] = []
        spent = 0
        for turn in reversed(recent):
            cost = self.count(turn.content) + MESSAGE_OVERHEAD
            if spent + cost > room:
                break
            kept.append(turn)
            spent += cost
        kept.reverse()
        if len(recent) > len(kept) and gist is not None and (gist.kind, gist.id) not in self.seen:
            gist_text = "Earlier in this conversation:\n" + gist.text
            cost = self.count(gist_text) + 1
            while kept and spent + cost > room:
                spent -= self.count(kept[0].content) + MESSAGE_OVERHEAD
                kept.pop(0)
            if spent + cost <= room:
                self.sections.append(gist_text)
                self.layer_tokens["session_gist"] = cost
                self.trace.append(TraceEntry("session_gist", gist.kind, gist.id, gist.score, gist.stage))
                self.available -= cost
        self.available -= spent
        self.layer_tokens["recent"] = spent
        self.trace.extend(TraceEntry("recent", "exchange", turn.id, 0.0, "session") for turn in kept)
        return kept


def _fit(messages: list[Message], trace: list[TraceEntry], count: Count, total: int) -> int:
    """Joining sections can tokenize a little differently from the parts: enforce the total."""
    def size() -> int:
        return sum(count(m["content"]) + MESSAGE_OVERHEAD for m in messages)

    tokens = size()
    while tokens > total and len(messages) > 2:  # drop the oldest recent turn
        dropped = messages.pop(1)
        for i, entry in enumerate(trace):
            if entry.layer == "recent":
                del trace[i]
                break
        tokens -= count(dropped["content"]) + MESSAGE_OVERHEAD
    if tokens > total:
        system = messages[0]["content"]
        messages[0]["content"] = truncate_to(system, count(system) - (tokens - total), count)
        tokens = size()
    return tokens


def _self_state_text(inputs: ContextInputs) -> str | None:
    parts = []
    state = inputs.self_state or {}
    if state.get("mood"):
        parts.append(f"Your mood: {state['mood']}.")
    if state.get("energy") is not None:
        parts.append(f"Your energy: {float(state['energy']):.1f} of 1.")
    if state.get("self_narrative"):
        parts.append(str(state["self_narrative"]))
    if inputs.drives:
        parts.append("Your drives: " + ", ".join(f"{k} {v:.2f}" for k, v in inputs.drives.items()) + ".")
    return " ".join(parts) or None
