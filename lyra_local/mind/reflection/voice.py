"""The companion's own voice: checks that what Lyra writes about itself is neither the person's words nor cut off.

The self-narrative, the reflections and an abstractive arc are written in the
companion's mouth. A small model asked to reflect on what a person said often
copies them ("I'm thinking of moving from Leeds to Edinburgh in September"
came back as Lyra's self-narrative), or stops where its token or length limit
falls ("keep close," ending on a comma). Both are refused here, and the caller
keeps the previous state and says so. A copy lightly edited ("I'm thinking of
moving to Edinburgh in September", with "from Leeds" dropped) has no six-word
run left, so a sentence in the first person is also refused when it is mostly
the content words of one of the person's own first-person sentences: the
person's situation told as the companion's. The same facts told of her ("Maya
is thinking of moving", "you are moving") are the companion's view, in the
right mouth, and pass. An emoticon or emoji ends a sentence as a stop does.
Pure functions: text in, verdict out; no store, no model. This module never rewrites a text, it only judges it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ECHO = 0.6  # share of a first-person sentence's content words from one sentence of the person's that makes it hers
ECHO_WORDS = 4  # ... and at least this many of them: "I'm tired." shares too little to be anyone's sentence
RUN = 6  # words in a row shared with the person's messages that make a text theirs, not the companion's
COPIED = "copied"  # a reason: the draft copied a run of the person's words
CUT = "cut"  # a reason: the draft stops mid-clause

_APOSTROPHES = re.compile(r"['’‘`]")
_WORD = re.compile(r"[^\W_]+")
_END = re.compile(r"[.!?…]+[\"'”’)\]]*$")
_SENTENCE = re.compile(r"[^.!?…\n]+")
# A smiley typed as text (":)", ";-D", "<3", "^_^", "xD") standing alone, or a run of emoji pictographs with
# their joiners, variation selectors and skin tones: either ends a sentence as a stop does.
_EMOTICON = re.compile(r"(?<!\S)(?:[:;=][-'^o]?[()\[\]DPpOo3*|/\\]+|<3+|\^_*\^|[xX]D+)(?=\s|$|[.!?,])")
_EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B50\u2764\uFE0F\u200D]+")
_TRAILING_FACES = re.compile(rf"(?:\s*(?:{_EMOTICON.pattern}|{_EMOJI.pattern}))+\s*$")
# Words a finished sentence does not end on: articles, conjunctions, prepositions, determiners and auxiliaries.
_OPEN_ENDED = frozenset("""a an the and or but nor so yet because although though whereas while if unless until
than that which who whom whose where when whether as of to in on at for with from by about into onto over under
between through after before during without within towards toward upon across against among around behind beyond
like via my your his her our their its this these those is am are was were be been being have has had do does
did will would can could shall should may might must not very i we they he she""".split())
# After a sentence's final stop, only these make it plainly unfinished ("and the." is not a sentence).
_NEVER_LAST = frozenset("a an the and or but nor my your our their".split())
# Words that put a sentence in the first person, as ``words`` spells them ("I'm" is "im"), by the speaker they
# name: "I" alone, or "we". "I remember the greyhound" is not "we adopted a greyhound" told as the companion's.
_FIRST_PERSON = {**dict.fromkeys("i im ive id me my mine myself".split(), "i"),
                 **dict.fromkeys("we us our ours ourselves".split(), "we")}
# Words that point at someone other than the speaker, by whom: a sentence with one its source lacks tells of them.
_OTHERS = {**dict.fromkeys("you youre youve youd youll your yours yourself yourselves".split(), "you"),
           **dict.fromkeys("she shes her hers herself".split(), "she"),
           **dict.fromkeys("he hes him his himself".split(), "he"),
           **dict.fromkeys("they theyre them their theirs themselves".split(), "they")}
# Words that carry no content of their own: what two sentences about different things share anyway.
_STOPWORDS = _OPEN_ENDED | _FIRST_PERSON.keys() | _OTHERS.keys() | frozenset("""it its itll thats theres there
here then now just really so too also very much more most some any all every each other own same such only even
still again ever never always lot lol bit quite ok okay yes no ill dont cant wont isnt arent wasnt get got gets
go goes going went""".split())
# A capitalised word inside a sentence is a name ("I hope Maya ..."); its first word only when it plainly is one:
# possessive ("Maya's move ...") or the subject of one of these ("Maya is ..."), not "Lately I'm thinking ...".
_NAME = re.compile(r"(?<=\s)[A-Z][\w'’]*|^[A-Z][\w]*(?=['’]s\b|\s+(?:is|was|has|had|and|says|said|will|would|"
                   r"seems|feels|wants|needs|loves|likes)\b)")


def words(text: str) -> list[str]:
    """Lower-case words without punctuation or apostrophes: "I'm" and "im" are one word, as people type it."""
    return _WORD.findall(_APOSTROPHES.sub("", text.casefold()))


def stem(word: str) -> str:
    """A word without its commonest endings, so that "move", "moving" and "moved" count as one content word."""
    for ending in ("ing", "ed", "es", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            word = word[:-len(ending)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, split at stops and line breaks (a message typed without stops is one)."""
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def content(said: Sequence[str]) -> frozenset[str]:
    """The stems of the words of ``said`` that carry content (no stopwords, no pronouns)."""
    return frozenset(stem(w) for w in said if w not in _STOPWORDS and (len(w) > 1 or w.isdigit()))


@dataclass(frozen=True)
class Told:
    """A sentence as the echo check reads it: who it speaks as, of whom, its words and its content words."""

    speakers: frozenset[str]  # "i" and/or "we": who the sentence speaks as
    others: frozenset[str]  # whom else it speaks of: pronouns by person ("she"), names by their stem ("maya")
    stems: frozenset[str]  # every word's stem: a name the person wrote in any case is not someone else
    content: frozenset[str]


def _told(sentence: str) -> Told:
    """``sentence`` as ``Told``: who it speaks as, of whom, and its words."""
    said = words(sentence)
    names = {stem(w) for w in words(" ".join(_NAME.findall(sentence))) if w not in _FIRST_PERSON}
    speakers = frozenset(_FIRST_PERSON[w] for w in said if w in _FIRST_PERSON)
    others = frozenset({_OTHERS[w] for w in said if w in _OTHERS} | names)
    return Told(speakers, others, frozenset(stem(w) for w in said), content(said))


class Said(frozenset[tuple[str, ...]]):
    """The person's six-word runs (the set itself) and their first-person sentences (``told``): everything
    the companion may never write about itself. A frozenset, so that a caller may keep treating it as runs."""

    told: tuple[Told, ...]

    def __new__(cls, said: Iterable[tuple[str, ...]], told: Iterable[Told] = ()) -> Said:
        self = super().__new__(cls, said)
        self.told = tuple(told)
        return self


def runs(texts: Iterable[str], n: int = RUN) -> Said:
    """Every run of ``n`` words inside one text (a run never spans two messages), and the texts' first-person
    sentences with enough content to be echoed (``Said.told``)."""
    out: set[tuple[str, ...]] = set()
    told: list[Told] = []
    for text in texts:
        said = words(text)
        out.update(tuple(said[i:i + n]) for i in range(len(said) - n + 1))
        for sentence in sentences(text):
            theirs = _told(sentence)
            if theirs.speakers and len(theirs.content) >= ECHO_WORDS:
                told.append(theirs)
    return Said(out, told)


def copied_run(text: str, said: frozenset[tuple[str, ...]], n: int = RUN) -> str | None:
    """The first run of ``n`` words of ``text`` found in ``said`` (from ``runs``), as words; None if none."""
    mine = words(text)
    for i in range(len(mine) - n + 1):
        if tuple(mine[i:i + n]) in said:
            return " ".join(mine[i:i + n])
    return None


def echoed(text: str, said: frozenset[tuple[str, ...]]) -> str | None:
    """The first sentence of ``text`` that retells one of the person's first-person sentences (``Said.told``)
    as the same speaker ("I", or "we"): at least ``ECHO`` of its content words, and ``ECHO_WORDS`` of them,
    from that one sentence. A sentence that speaks of someone that sentence does not ("she", "you", "Maya")
    tells of the person, not as her, and passes. None if none does (always for plain runs, which carry none)."""
    told: tuple[Told, ...] = getattr(said, "told", ())
    for sentence in sentences(text):
        mine = _told(sentence)
        for theirs in told:
            shared = mine.content & theirs.content
            if (mine.speakers & theirs.speakers and len(shared) >= ECHO_WORDS
                    and len(shared) >= ECHO * len(mine.content) and mine.others <= theirs.others | theirs.stems):
                return sentence
    return None


def _faces_removed(text: str) -> str:
    """``text`` without the smileys and emoji in it, whose brackets are no clause's."""
    return _EMOJI.sub(" ", _EMOTICON.sub(" ", text))


def cut_mid_clause(text: str, limit: int | None = None) -> bool:
    """Whether ``text`` stops mid-clause: on a comma or dash, on a word no sentence ends on, with a quote or
    bracket left open, or with no final stop at the length limit it was generated under (``limit``)."""
    text = text.strip()
    if not text:
        return False
    bare = _faces_removed(text)
    if bare.count('"') % 2 or bare.count("“") != bare.count("”") or bare.count("(") != bare.count(")"):
        return True
    said = words(bare)
    last = said[-1] if said else ""
    faces = _TRAILING_FACES.search(text)  # a smiley or emoji at the end is the sentence's stop ...
    ended = text[:faces.start()].rstrip() if faces else text
    if not ended:
        return False
    if ended[-1] in ",;:-–—/&":  # ... unless the clause before it was left open ("keep close, 😊")
        return True
    if faces or _END.search(text):
        return last in _NEVER_LAST
    if limit is not None and len(text) >= limit - 2:
        return True
    return last in _OPEN_ENDED


@dataclass(frozen=True)
class Refusal:
    """One field of a draft refused, and why (``COPIED`` or ``CUT``); never the text itself, for the log."""

    field: str
    reason: str


def judge(text: str, said: frozenset[tuple[str, ...]], limit: int | None = None) -> str | None:
    """Why ``text`` cannot be the companion's own words (``COPIED`` first: a run, or a sentence of the person's
    retold in the first person), or None if it can."""
    if copied_run(text, said) is not None or echoed(text, said) is not None:
        return COPIED
    if cut_mid_clause(text, limit):
        return CUT
    return None


def keep_own_voice(state: dict[str, Any], previous: Mapping[str, Any], said: frozenset[tuple[str, ...]],
                   limits: Mapping[str, int] | None = None) -> list[Refusal]:
    """Refuse the self-narrative and reflections of ``state`` that are not the companion's own (in place).

    A refused self-narrative is replaced by the previous one; refused reflections are dropped, and if none
    of the draft's are left the previous ones stay. What is kept from before is judged too, so a state
    written before these checks does not carry the person's words on. Returns what was refused.
    """
    limits = limits or {}
    refused: list[Refusal] = []
    narrative = str(state.get("self_narrative") or "")
    reason = judge(narrative, said, limits.get("self_narrative")) if narrative else None
    if reason is not None:
        refused.append(Refusal("self_narrative", reason))
        before = str(previous.get("self_narrative") or "")
        state["self_narrative"] = before if before and judge(before, said) is None else ""
    drafted = [r for r in state.get("reflections") or [] if isinstance(r, str)]
    kept = []
    for reflection in drafted:
        reason = judge(reflection, said, limits.get("reflections"))
        if reason is None:
            kept.append(reflection)
        else:
            refused.append(Refusal("reflections", reason))
    if drafted and not kept:
        kept = [r for r in previous.get("reflections") or [] if isinstance(r, str) and judge(r, said) is None]
    state["reflections"] = kept
    return refused


def reasons(refused: Sequence[Refusal]) -> list[str]:
    """The distinct reasons, in a stable order, for the log."""
    return [r for r in (COPIED, CUT) if any(x.reason == r for x in refused)]
