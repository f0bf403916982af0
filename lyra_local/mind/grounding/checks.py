"""Grounding: what the dream writes must be said in what it was built from.

Every text the dream would write (a gist, a digest, the narrative, a
reflection, a world-state proposal) is checked against its sources before it
is written: it is prose, not a transcript; it fits its budget; every name,
number and rare word in it occurs in the sources; and every sentence is close
in meaning to one source (``SUPPORT``, measured by ``scripts/eval_consolidation.py``).
What fails is not written; the caller logs which check failed, never the text.

``extractive`` is the floor when a draft fails: the session's own sentences,
the most central ones by the embedding model, without repeats, in their order,
within the budget, each quoted verbatim under who said it and the day it was
said (``Maya, 8 May 2023: “I'm thinking of moving to Leeds next April.”``):
nothing is reworded, so nothing can be put in the wrong mouth, and a relative
time ("next April") reads from the day it was said. A placeholder ("[an image
was here; not imported]") is no sentence. The floor is faithful by
construction and needs no generative model. This module must not write to the
store: it only judges and selects.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import numpy as np
import numpy.typing as npt

SUPPORT = 0.5  # a sentence's best cosine with a source must reach this (scripts/eval_consolidation.py)
CENTRAL_SHARE = 0.6  # the floor weighs centrality against closeness to what it already chose
REPEAT = 0.9  # two sentences this similar say the same thing: the floor keeps one
FLOOR_QUOTES = 5  # the floor's summary of a session or a period: its few most central sentences
ASKS = 0.6  # a question says less of the person than a statement: chosen after the statements as central
CITES = 0.5  # an edited extract's sentence (the floor's before it quoted) is mostly the words of the turn it edits
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


# -- the floor: the most central sentences, quoted verbatim under who said them and when -------------------------

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
DAY = r"\d{1,2} (?:" + "|".join(MONTHS) + r") \d{4}"
# Bracketed text is a placeholder or a caption ("[an image was here; not imported]", "[shares a photo: …]"), a
# markdown link's label ("[the guide](https://…)") or a citation ("[1]"): never a sentence of the person's.
ASIDE = re.compile(r"\[[^\[\]\n]*\](?:\([^()\s]*\))?")
MARKUP = re.compile(r"\*\*|__|`")  # bold and code marks: how a reply was shown, not what it said
LIST_MARK = re.compile(r"^\s*(?:[-*•>#]+|\d{1,2}[.)])\s+")
# One quote of the floor: "Maya, 8 May 2023: “…”". Whoever said it is a name, never a sentence's end ("… moved.
# Maya"): a summary's own sentences may come before it. Also the floor's two earlier forms, read back from
# summaries written by older versions: "Maya said, “…”" and "In Maya's words: “…”".
QUOTED = re.compile(rf"In (?P<their>[^“”\n]{{1,60}}?)['’]s words: “(?P<theirs>[^”]*)”"
                    rf"|(?P<said>[A-Z][\w'’.-]*(?: [A-Za-z][\w'’.-]*)?) said, “(?P<saying>[^”]*)”"
                    rf"|(?<!\S)(?P<who>(?:(?![.!?]\s)[^\s,:“”])(?:(?![.!?]\s)[^,:“”\n]){{0,59}}?)"
                    rf"(?:, (?P<when>{DAY}))?: “(?P<sentence>[^”]*)”")


def day_of(moment: date) -> str:
    """The day a thing was said, as a quote writes it: "8 May 2023" (day month year, whatever the locale)."""
    return f"{moment.day} {MONTHS[moment.month - 1]} {moment.year}"


@dataclass(frozen=True)
class Quote:
    """One sentence the floor may keep: who said it and on which day, where (for order), the sentence as said, and
    how much it weighs. A sentence said in a turn is ``quoted``: written verbatim in quotation marks under its
    author and day. One that is not (a model's summary, an extract written before the floor quoted) is written as
    it is."""

    who: str | None
    order: tuple[int, int]
    sentence: str
    weight: float = 1.0  # a reply's words count for less than the person's
    when: str | None = None
    quoted: bool = True

    def render(self) -> str:
        if not self.quoted:
            return self.sentence
        who = self.who[:1].upper() + self.who[1:] if self.who else None  # "The user, …": each quote opens
        by = ", ".join(part for part in (who, self.when) if part)
        return f"{by}: “{self.sentence}”" if by else f"“{self.sentence}”"


@dataclass(frozen=True)
class Said:
    """A turn for the floor: who said it (the person, the companion, or the assistant it was imported from), its
    text, how much its sentences weigh, and the day it was said (``day_of``)."""

    who: str | None
    text: str
    weight: float = 1.0
    when: str | None = None


def _plain(line: str) -> str:
    """A line as its sentences are quoted: without list marks, bold or code marks, and with straight double quotes
    (a curly one would end the quote around it)."""
    return MARKUP.sub("", LIST_MARK.sub("", line)).replace("“", "\"").replace("”", "\"")


def said_sentences(text: str) -> list[str]:
    """The sentences a turn may give a quote: its lines' sentences, a placeholder in brackets taken out (it
    divides the text around it: no sentence is joined across it, so each is a run of the turn's own words)."""
    return [s for line in text.splitlines() for part in ASIDE.split(_plain(line))
            for s in sentences(part.strip().lstrip(",;:").strip())]


def candidate_quotes(turns: Sequence[Said], min_words: int = MIN_WORDS) -> list[Quote]:
    """What each turn may give a summary: its sentences long enough to say something, verbatim, under who said
    them and when. A ``Name:`` prefix names the speaker (weight 1: both sides of an imported talk between two
    people are people) where every turn has one, as a transcript imported from elsewhere does: in a conversation
    of one's own, "Update: I got the job" was said by the person, not by "Update".

    When no sentence is that long (a session of short lines), every sentence is a candidate, weighed by its
    length: "I moved to Lisbon" says more than "ok".
    """
    transcript = bool(turns) and all(split_speaker(turn.text)[0] for turn in turns)
    out = []
    for t, turn in enumerate(turns):
        named, body = split_speaker(turn.text) if transcript else (None, turn.text)
        for s, sentence in enumerate(said_sentences(body)):
            n = len(words(sentence))
            if n >= min_words and not sentence.endswith(":"):  # "Here are a few things to check:" says nothing
                weight = (1.0 if named else turn.weight) * min(1.0, n / MIN_WORDS)
                asks = ASKS if sentence.rstrip().endswith("?") else 1.0
                out.append(Quote(named or turn.who, (t, s), sentence, weight * asks, turn.when))
    return out if out or min_words <= 1 else candidate_quotes(turns, 1)


def extractive(quotes: Sequence[Quote], embed: Embed, *, budget: int, count: Count, most: int = FLOOR_QUOTES) -> str:
    """Central quotes that cover the session, without repeats, in their order, within ``budget`` tokens and at
    most ``most`` of them: a handful of key sentences reads as a memory, a budget's worth as a transcript.

    Chosen one at a time by maximal marginal relevance: how central a quote is
    (cosine with the whole session's centroid) less how close it is to one
    already chosen, so the gist covers several threads, not one said many ways.
    A quote is whole or left out: one too long for what is left of the budget
    is skipped, never cut.
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
            continue  # a repeat, or too long for what is left (a shorter one may still fit)
        chosen.append(best)
        used += costs[best]
        closest = np.maximum(closest, vectors @ vectors[best])
    return " ".join(quotes[i].render() for i in sorted(chosen, key=lambda i: quotes[i].order))


def quotes_of(text: str, order: int, weights: Mapping[str, float] | None = None) -> list[Quote]:
    """A summary read back, to build an extract of summaries on it: each quote as it was written (who, day and
    sentence, so a roll-up quotes it again unchanged), and any other sentence as a sentence. ``weights``: how
    much a quote of someone's counts (a reply's less than the person's), 1 if not given.

    The floor's earlier forms are read too: a quote "Maya said, “…”" or "In Maya's words: “…”" is Maya's (its day
    was not written), and a sentence it edited to the third person ("Maya is thinking of …") is a sentence."""
    out: list[Quote] = []

    def plain(part: str) -> None:
        out.extend(Quote(None, (order, len(out)), s, quoted=False) for s in sentences(part))

    at = 0
    for m in QUOTED.finditer(text):
        plain(text[at:m.start()])
        at = m.end()
        who = m.group("their") or m.group("said") or m.group("who")
        when = m.group("when")
        if when is None and re.fullmatch(DAY, who):  # a quote of no one's, on a day
            who, when = None, who
        sentence = m.group("theirs") if m.group("their") else m.group("saying") if m.group("said") else \
            m.group("sentence")
        out.append(Quote(who, (order, len(out)), sentence.strip(), (weights or {}).get(who or "", 1.0), when))
    plain(text[at:])
    return out


def cited(text: str, turns: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The turns (rows with a ``content``) a memory is an extract of, if it is one; else all of them.

    An extract of quotes (the floor's ``Maya, 8 May 2023: “…”``, or an
    earlier form) cites the turns that say a quoted sentence. An edited
    extract (the floor's before it quoted) cites, for each of its sentences,
    the turn sharing most of its words in runs of two or more ("Maya is
    thinking of moving to Leeds" is most of "I'm thinking of moving to
    Leeds"); a text with a sentence that is not mostly one turn's words (a
    model's summary) is no extract, and all the turns are its sources.
    """
    quoted = [" ".join(q.sentence.split()) for q in quotes_of(text, 0) if q.quoted and q.sentence]
    if quoted:
        said = [" ".join(" ".join(_plain(line) for line in str(t["content"]).splitlines()).split()) for t in turns]
        return [t for t, line in zip(turns, said, strict=True) if any(q in line for q in quoted)] or list(turns)
    pairs = [_pairs(words(str(t["content"]))) for t in turns]
    found: set[int] = set()
    for sentence in sentences(text):
        shares = [_covered(words(sentence), p) for p in pairs]
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
