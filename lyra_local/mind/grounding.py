"""Grounding: what the dream writes must be said in what it was built from.

Every text the dream would write (a gist, a digest, the narrative, a
reflection, a world-state proposal) is checked against its sources before it
is written: it is prose, not a transcript; it fits its budget; every name,
number and rare word in it occurs in the sources; and every sentence is close
in meaning to one source (``SUPPORT``, measured by ``scripts/eval_consolidation.py``).
What fails is not written; the caller logs which check failed, never the text.

``extractive`` is the floor when a draft fails: the session's own sentences,
the most central ones by the embedding model, without repeats, in their order,
within the budget, edited into a summary's sentences where the edit is
mechanical (``third_person``: "Maya is thinking of moving …", "ChatGPT
listed: …"), else quoted once, each naming who said it. It is faithful by
construction and needs no generative model. This module must not write to the
store: it only judges and selects.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from . import third_person

SUPPORT = 0.5  # a sentence's best cosine with a source must reach this (scripts/eval_consolidation.py)
CENTRAL_SHARE = 0.6  # the floor weighs centrality against closeness to what it already chose
REPEAT = 0.9  # two sentences this similar say the same thing: the floor keeps one
FLOOR_QUOTES = 5  # the floor's summary of a session or a period: its few most central sentences
QUOTE_WEIGHT = 0.6  # a sentence no edit can turn to the third person is quoted, and chosen after the edited ones
REPLY_WEIGHT = 0.8  # in a roll-up, what a reply was about counts for less than what the person said
CITES = 0.5  # an edited extract's sentence is mostly (this share of its words) the words of the turn it edits
MIN_WORDS = 6  # shorter sentences ("Wow!", "Thanks, Mel!") say too little to keep in a gist
SPEAKER = re.compile(r"^([A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*)?):\s")
ROLE_WORDS = ("user", "assistant", "system", "ai", "human", "bot")
SENTENCE = re.compile(r"(?<=[.!?…])[\"'”’)]*\s+(?=[\"'“‘(]?[A-Z0-9])")
WORD = re.compile(r"[\w][\w'’-]*")
NUMBER = re.compile(r"\d")
# Words a faithful summary may use that its sources need not contain.
FRAMING = frozenset("""
a an the and or but so yet if then than that this these those there here it its they them their he him his she
her hers we us our you your i me my mine who whom whose which what when where why how while as at by for from in
into of on onto to with without within about above after against along among around before behind below
beneath beside between beyond during except inside near off out outside over past since through throughout
toward towards under until up upon also too very really quite just only even still again ever never always
often sometimes later earlier finally first second third last next then now soon meanwhile overall however
although though because both each every either neither all any some many much more most other another such same
one two own not no yes be is am are was were been being have has had having do does did done doing will would
shall should can could may might must said says say told tell talked talk talking discussed discuss
discussing mentioned mention shared share sharing asked ask asking replied reply answered answer described
describe expressed express felt feel feeling feelings thought think conversation conversations summary session
sessions chat chats day days week weeks month months year years today yesterday tomorrow morning evening night
named called kind type sort lot lots bit something someone thing things way ways part
""".split())


@dataclass(frozen=True)
class Source:
    """One thing a memory was built from: who said it (if a turn), its text, its vector."""

    text: str
    who: str | None = None
    vector: npt.NDArray[np.float32] | None = None


@dataclass(frozen=True)
class Verdict:
    """Which checks a draft failed (none: it may be written), with counts for the log, never text."""

    failed: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed


Embed = Callable[[list[str]], npt.NDArray[np.float32]]
Count = Callable[[str], int]


def split_speaker(text: str) -> tuple[str | None, str]:
    """``"Caroline: I went..."`` -> ``("Caroline", "I went...")``; a turn without a prefix has no speaker in it."""
    m = SPEAKER.match(text)
    return (m.group(1), text[m.end():]) if m else (None, text)


def sentences(text: str) -> list[str]:
    """The sentences of a text (its lines first: a line break ends a sentence too)."""
    out: list[str] = []
    for line in text.splitlines():
        out.extend(s.strip() for s in SENTENCE.split(line.strip()) if s.strip())
    return out


def words(text: str) -> list[str]:
    return [w.lower().replace("’", "'") for w in WORD.findall(text)]


def forms(word: str) -> set[str]:
    """A word and its plain forms ("parades" -> "parade", "painted" -> "paint", "Mel's" -> "mel")."""
    out = {word}
    for suffix in ("'s", "s", "es", "ed", "d", "ing"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            out.add(word[:-len(suffix)])
    return out


def vocabulary(sources: Sequence[str]) -> set[str]:
    """Every word of the sources in every plain form, for ``unsupported_terms``."""
    return {form for text in sources for w in words(text) for form in forms(w)}


def speaker_lines(text: str, speakers: Sequence[str]) -> int:
    """Lines or sentences that read like a transcript: ``"Name: ..."`` for a speaker or a role word."""
    names = {s.lower() for s in speakers if s} | set(ROLE_WORDS)
    found = 0
    for sentence in sentences(text):
        for m in re.finditer(r"(?:^|[\s\"“(])([A-Za-z][\w'’.-]*(?: [A-Za-z][\w'’.-]*)?)\s*:\s", sentence):
            name = m.group(1).lower()
            if name in names or name.split()[-1] in names:
                found += 1
    return found


def unsupported_terms(text: str, known: set[str], allowed: set[str], count: Count) -> list[str]:
    """Names, numbers and rare words of ``text`` that occur in no source (``known``, from ``vocabulary``).

    A name is a capitalized word (at a sentence's start, one that is not a
    framing word); a rare word is one the model's vocabulary splits into
    pieces (``count(" word") > 1``): everyday words are single tokens.
    """
    out: list[str] = []
    for sentence in sentences(text):
        for n, m in enumerate(WORD.finditer(sentence)):
            raw = m.group(0)
            word = raw.lower().replace("’", "'")
            if word in allowed or forms(word) & known:
                continue
            is_number = bool(NUMBER.search(word))
            is_name = raw[0].isupper() and (n > 0 or word not in FRAMING)
            is_rare = len(word) >= 4 and word not in FRAMING and count(" " + word) > 1
            if is_number or is_name or is_rare:
                out.append(word)
    return out


def support(found: Sequence[str], sources: Sequence[Source], embed: Embed) -> npt.NDArray[np.float32]:
    """Each sentence's best cosine with a source (sources without a stored vector are embedded here)."""
    if not found or not sources:
        return np.zeros(len(found), dtype=np.float32)
    missing = [s.text for s in sources if s.vector is None]
    fresh = iter(embed(missing)) if missing else iter(())
    matrix = np.stack([np.asarray(s.vector if s.vector is not None else next(fresh), dtype=np.float32)
                       for s in sources])
    return np.asarray((embed(list(found)) @ matrix.T).max(axis=1), dtype=np.float32)


def judge(text: str, sources: Sequence[Source], embed: Embed, *, count: Count,
          names: Sequence[str] = ()) -> list[tuple[str, tuple[str, ...]]]:
    """Each sentence of a draft with the checks it fails: ``unsupported_terms``, ``unsupported_sentences``."""
    found = sentences(text)
    known = vocabulary([s.text for s in sources])
    allowed = {w for name in names for w in words(name)}
    best = support(found, sources, embed)
    out = []
    for sentence, score in zip(found, best, strict=True):
        failed = []
        if unsupported_terms(sentence, known, allowed, count):
            failed.append("unsupported_terms")
        if score < SUPPORT:
            failed.append("unsupported_sentences")
        out.append((sentence, tuple(failed)))
    return out


def check(text: str, sources: Sequence[Source], embed: Embed, *, budget: int, count: Count,
          names: Sequence[str] = (), keep: float = 1.0, not_speaking: Sequence[str] = ()) -> tuple[Verdict, str]:
    """Every grounding check on one draft, and what of it may be written.

    A transcript line or an over-long draft fails it whole. Otherwise the
    sentences that fail (a name, number or rare word no source says, or too
    far from every source) are dropped; if fewer than ``keep`` of the
    sentences remain, the draft fails. ``names`` are the user's and the
    companion's (allowed, though no source says them). A name in
    ``not_speaking`` (the companion's, over a conversation whose replies were
    imported from another assistant) that no source says fails it whole: such
    a draft puts the other assistant's words in the companion's mouth.
    """
    if not text.strip() or not sentences(text):
        return Verdict(("empty",), {}), ""
    failed: list[str] = []
    counts: dict[str, int] = {}
    speakers = [*names, *(s.who for s in sources if s.who)]
    lines = speaker_lines(text, speakers)
    if lines:
        failed.append("speaker_lines")
        counts["speaker_lines"] = lines
    drafted = set(words(text))
    said = {w for s in sources for w in words(s.text)}
    wrong = [n for n in not_speaking if words(n) and set(words(n)) <= drafted and not set(words(n)) <= said]
    if wrong:
        failed.append("wrong_mouth")
        counts["wrong_mouth"] = len(wrong)
    tokens = count(text)
    if tokens > budget:
        failed.append("budget")
        counts["tokens"] = tokens
    if failed:
        return Verdict(tuple(failed), counts), ""
    judged = judge(text, sources, embed, count=count, names=names)
    for check_name in ("unsupported_terms", "unsupported_sentences"):
        n = sum(check_name in f for _, f in judged)
        if n:
            counts[check_name] = n
    kept = [sentence for sentence, f in judged if not f]
    if len(kept) < keep * len(judged) or not kept:
        return Verdict(tuple(c for c in ("unsupported_terms", "unsupported_sentences") if c in counts), counts), ""
    if len(kept) < len(judged):
        counts["sentences_dropped"] = len(judged) - len(kept)
    return Verdict((), counts), " ".join(kept)


@dataclass(frozen=True)
class Quote:
    """One sentence kept by the floor: who said it, where (for order), the sentence as said (what its place in
    the session is measured by), and how the summary writes it (an edit of it; ``None``: the sentence itself)."""

    who: str | None
    order: tuple[int, int]
    sentence: str
    weight: float = 1.0  # the companion's own words count for less than the person's
    text: str | None = None

    def render(self) -> str:
        return self.text if self.text is not None else self.sentence

    @property
    def quoting(self) -> bool:
        """Whether it is written as a quote (the floor keeps one at most: two in a row are a transcript again)."""
        return "“" in self.render()


@dataclass(frozen=True)
class Said:
    """A turn for the floor: who said it, its text, how much it weighs, whether it is a reply (reduced to what it
    was about) rather than a person's (edited to the third person), and whom it was said to."""

    who: str | None
    text: str
    weight: float = 1.0
    reply: bool = False
    to: str | None = None


def _edit(who: str | None, sentence: str, to: str | None, weight: float, context: str | None = None
          ) -> tuple[str | None, float]:
    """A person's sentence as the summary writes it, and its weight: a quote of it weighs less than an edit.
    ``context`` (the conversation's text) tells a name from a common word where the edit lowercases one."""
    if not who:
        return None, weight
    text = third_person.edited(sentence, who, to, context)
    if text:
        return text, weight
    asks = 0.5 if "?" in sentence else 1.0  # of the sentences that can only be quoted, a statement says more
    return third_person.in_their_words(sentence, who), weight * QUOTE_WEIGHT * asks


def candidate_quotes(turns: Sequence[Said], min_words: int = MIN_WORDS) -> list[Quote]:
    """What each turn may give a summary: a person's sentences long enough to say something, edited to the third
    person (or quoted once where no edit is mechanical), and a reply reduced to what it was about. A ``Name:``
    prefix names the speaker (and makes it a person's turn, weight 1).

    When no sentence is that long (a session of short lines), every sentence is a candidate, weighed by its
    length: "I moved to Lisbon" says more than "ok".
    """
    out = []
    context = "\n".join(turn.text for turn in turns)
    for t, turn in enumerate(turns):
        named, body = split_speaker(turn.text)
        if turn.reply and not named and turn.who:
            about = third_person.reply_about(body, turn.who, turn.to or "", sentences(body), context=context)
            if about and len(words(body)) >= min_words:
                out.append(Quote(turn.who, (t, 0), about, turn.weight, about))
            continue
        for s, sentence in enumerate(sentences(body)):
            n = len(words(sentence))
            if n >= min_words:
                plain = sentence.replace("“", "\"").replace("”", "\"")
                text, weight = _edit(named or turn.who, plain, None if named else turn.to,
                                     1.0 if named else turn.weight, context)
                out.append(Quote(named or turn.who, (t, s), plain, weight * min(1.0, n / MIN_WORDS), text))
    return out if out or min_words <= 1 else candidate_quotes(turns, 1)


def extractive(quotes: Sequence[Quote], embed: Embed, *, budget: int, count: Count, most: int = FLOOR_QUOTES) -> str:
    """Central quotes that cover the session, without repeats, in their order, within ``budget`` tokens and at
    most ``most`` of them: a handful of key sentences reads as a memory, a budget's worth as a transcript.

    Chosen one at a time by maximal marginal relevance: how central a quote is
    (cosine with the whole session's centroid) less how close it is to one
    already chosen, so the gist covers several threads, not one said many ways.
    """
    if not quotes:
        return ""
    vectors = embed([q.sentence for q in quotes])
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
    centroid = vectors.mean(axis=0)
    centrality = vectors @ (centroid / max(float(np.linalg.norm(centroid)), 1e-9))
    centrality = centrality * np.asarray([q.weight for q in quotes], dtype=np.float32)
    costs = [count(q.render()) + 1 for q in quotes]
    chosen: list[int] = []
    used = 0
    closest = np.zeros(len(quotes), dtype=np.float32)  # each quote's highest cosine with a chosen one
    open_ = [i for i in range(len(quotes)) if costs[i] <= budget]
    while open_ and len(chosen) < most:
        gains = CENTRAL_SHARE * centrality[open_] - (1 - CENTRAL_SHARE) * closest[open_]
        best = open_[int(np.argmax(gains))]
        open_.remove(best)
        if closest[best] >= REPEAT or used + costs[best] > budget or \
                (quotes[best].quoting and any(quotes[c].quoting for c in chosen)):
            continue  # a repeat, too long for what is left (a shorter one may still fit), or a second quote
        chosen.append(best)
        used += costs[best]
        closest = np.maximum(closest, vectors @ vectors[best])
    return " ".join(quotes[i].render() for i in sorted(chosen, key=lambda i: quotes[i].order))


def cited(text: str, turns: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The turns (rows with a ``content``) a memory is an extract of, if it is one; else all of them.

    An extract written as quotes (``Maya said, “…”``, as the floor wrote before
    its edits) cites the turns holding a quote. An edited extract cites, for
    each of its sentences, the turn sharing most of its words in runs of two or
    more ("Maya is thinking of moving to Leeds" is most of "I'm thinking of
    moving to Leeds"); a text with a sentence that is not mostly one turn's
    words (a model's summary) is no extract, and all the turns are its sources.
    """
    plain = [str(t["content"]).replace("“", "\"").replace("”", "\"") for t in turns]
    quoted = [m.group(2).strip() for m in QUOTED.finditer(text)]
    if quoted:
        return [t for t, said in zip(turns, plain, strict=True) if any(q in said for q in quoted)] or list(turns)
    pairs = [_pairs(words(said)) for said in plain]
    found: set[int] = set()
    for sentence in sentences(text):
        said = words(sentence)
        shares = [_covered(said, p) for p in pairs]
        best = max(shares, default=0.0)
        if best < CITES:
            return list(turns)
        found |= {n for n, share in enumerate(shares) if share == best}
    return [t for n, t in enumerate(turns) if n in found] or list(turns)


def _pairs(said: list[str]) -> set[tuple[str, str]]:
    return set(zip(said, said[1:], strict=False))


def _covered(said: list[str], pairs: set[tuple[str, str]]) -> float:
    """The share of a sentence's words that are in a run of two or more of a turn's words."""
    hit = [False] * len(said)
    for i, pair in enumerate(zip(said, said[1:], strict=False)):
        if pair in pairs:
            hit[i] = hit[i + 1] = True
    return sum(hit) / len(said) if said else 0.0


# "Caroline said", "Lyra said", and also "The user said" (a person without a configured name): the floor's form
# before its edits, still read in what it wrote then
QUOTED = re.compile(r"([A-Z][\w'’.-]*(?: [A-Za-z][\w'’.-]*)?) said, “([^”]+)”")


def quotes_of(text: str, order: int) -> list[Quote]:
    """The sentences of a summary, to build an extract of summaries on it (a quote counts for less than an edit);
    a text in the floor's former quote form gives its quotes, edited as the floor edits them now."""
    found = [Quote(m.group(1), (order, n), m.group(2), *_edit(m.group(1), m.group(2), None, 1.0)[::-1])
             for n, m in enumerate(QUOTED.finditer(text))]
    return found or [Quote(None, (order, n), s, QUOTE_WEIGHT if "“" in s else REPLY_WEIGHT
                           if third_person.REPLY.match(s) else 1.0) for n, s in enumerate(sentences(text))]
