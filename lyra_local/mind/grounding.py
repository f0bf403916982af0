"""Grounding: what the dream writes must be said in what it was built from.

Every text the dream would write (a gist, a digest, the narrative, a
reflection, a world-state proposal) is checked against its sources before it
is written: it is prose, not a transcript; it fits its budget; every name,
number and rare word in it occurs in the sources; and every sentence is close
in meaning to one source (``SUPPORT``, measured by ``scripts/eval_consolidation.py``).
What fails is not written; the caller logs which check failed, never the text.

``extractive`` is the floor when a draft fails: the session's own sentences,
the most central ones by the embedding model, without repeats, in their order,
within the budget, each attributed to who said it. It is faithful by
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

SUPPORT = 0.5  # a sentence's best cosine with a source must reach this (scripts/eval_consolidation.py)
CENTRAL_SHARE = 0.6  # the floor weighs centrality against closeness to what it already chose
REPEAT = 0.9  # two sentences this similar say the same thing: the floor keeps one
FLOOR_QUOTES = 5  # the floor's summary of a session or a period: its few most central sentences
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
          names: Sequence[str] = (), keep: float = 1.0) -> tuple[Verdict, str]:
    """Every grounding check on one draft, and what of it may be written.

    A transcript line or an over-long draft fails it whole. Otherwise the
    sentences that fail (a name, number or rare word no source says, or too
    far from every source) are dropped; if fewer than ``keep`` of the
    sentences remain, the draft fails. ``names`` are the user's and the
    companion's (allowed, though no source says them).
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
    """One sentence kept by the floor: who said it, where (for order), and the sentence."""

    who: str | None
    order: tuple[int, int]
    sentence: str
    weight: float = 1.0  # the companion's own words count for less than the person's

    def render(self) -> str:
        if not self.who:
            return self.sentence
        return f"{self.who[:1].upper()}{self.who[1:]} said, “{self.sentence}”"


def candidate_quotes(turns: Sequence[tuple[str | None, str, float]], min_words: int = MIN_WORDS) -> list[Quote]:
    """The sentences of (who, text, weight) turns long enough to say something; a ``Name:`` prefix names the
    speaker (and makes it a person's turn, weight 1).

    When no sentence is that long (a session of short lines), every sentence is a candidate, weighed by its
    length: "I moved to Lisbon" says more than "ok".
    """
    out = []
    for t, (who, text, weight) in enumerate(turns):
        named, body = split_speaker(text)
        for s, sentence in enumerate(sentences(body)):
            n = len(words(sentence))
            if n >= min_words:
                out.append(Quote(named or who, (t, s), sentence.replace("“", "\"").replace("”", "\""),
                                 (1.0 if named else weight) * min(1.0, n / MIN_WORDS)))
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
        if closest[best] >= REPEAT or used + costs[best] > budget:
            continue  # a repeat, or too long for what is left: a shorter quote may still fit
        chosen.append(best)
        used += costs[best]
        closest = np.maximum(closest, vectors @ vectors[best])
    return " ".join(quotes[i].render() for i in sorted(chosen, key=lambda i: quotes[i].order))


def cited(text: str, turns: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The turns (rows with a ``content``) a memory quotes, if it quotes any; else all of them."""
    quoted = [m.group(2).strip() for m in QUOTED.finditer(text)]
    if not quoted:
        return list(turns)
    plain = [str(t["content"]).replace("“", "\"").replace("”", "\"") for t in turns]
    return [t for t, said in zip(turns, plain, strict=True) if any(q in said for q in quoted)] or list(turns)


# "Caroline said", "Lyra said", and also "The user said" (a person without a configured name)
QUOTED = re.compile(r"([A-Z][\w'’.-]*(?: [A-Za-z][\w'’.-]*)?) said, “([^”]+)”")


def quotes_of(text: str, order: int) -> list[Quote]:
    """The quotes of an extractive text (or the sentences of any other), to build an extractive text on it."""
    found = [Quote(m.group(1), (order, n), m.group(2)) for n, m in enumerate(QUOTED.finditer(text))]
    return found or [Quote(None, (order, n), s) for n, s in enumerate(sentences(text))]
