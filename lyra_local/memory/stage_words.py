"""What recall's stages and the context's layers mean, in a person's words: the labels "Why?" shows.

A trace records how each memory reached a reply's context by the names the
code uses ("dense+bm25+context+answer", layer "recalled"). A person reads
"found by meaning and by words". One table per name, kept beside the stages'
registry (``stages.STAGES``): ``tests/test_stage_words.py`` fails when a stage
is added without words here. Pure data; it must never decide anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# Each recall stage's name (``Stage.name``) -> how it found or raised a memory, to follow "found ": the page
# says "found by meaning and by words".
STAGE_WORDS: Mapping[str, str] = MappingProxyType({
    # stages that find memories (they put them in the pool, so a trace names them)
    "dense": "by meaning",  # nearest vectors: meaning without shared words
    "bm25": "by words",  # full text (BM25) over the memory alone: it shares words with your message
    "context": "by words in it or the turn before it",  # full text over a turn read after the one before it
    "rare": "by a rare word (a name, a number)",  # full text on the question's rare words only
    "date": "in the days your message names",  # a question naming a period looks among its turns
    "answer": "as the answer to a matching question",  # the turn after a matching turn that asks
    "gists": "through its conversation's summary",  # the optional stage: sessions whose gists match
    "statement": "as a statement of what your message asks about",  # "what is my job?" -> "i teach chemistry"
    "expand": "by meaning, near what your message found first",  # the query widened by its nearest turns
    # stages that re-rank what was found (never named by a trace today; worded so a new use reads right)
    "neighbours": "by meaning, with the turns around it",
    "speaker": "as said by the one your message is about",
    "lexical_trust": "by how specific its words are",
    "session": "through its conversation's other matching turns",
    "current": "as the latest of what matched",
    "rerank": "by a second reading beside your message",
    "bursts": "with the burst of messages it belongs to",
    "diversity": "as no repeat of another memory",
    # how the context took a digest that recall did not rank (the recent turns' "session" is the stage above's
    # name too: their layer, "recent", says what they are, and the page leaves them out)
    "timeline": "on your timeline",
})

# A stage whose finding says nothing more once another found the memory too: a turn whose own words matched
# (bm25) also matches when read with the turn before it (context).
IMPLIED_BY: Mapping[str, str] = MappingProxyType({"context": "bm25", "neighbours": "dense"})

# A context layer's name (``context.TraceEntry.layer``) -> what it is.
LAYER_WORDS: Mapping[str, str] = MappingProxyType({
    "recalled": "A moment remembered",
    "gists": "A past conversation",
    "digests": "Your timeline",
    "session_gist": "Earlier in this conversation",
    "recent": "This conversation",
})


def found_by(stages: str) -> list[str]:
    """A trace's ``stage`` ("dense+bm25+answer") in words, each once, in order, leaving out what another says
    already (``IMPLIED_BY``); a name with no words is kept as it is (a trace written before the name was worded
    must still show)."""
    names = [n for n in stages.split("+") if n]
    words: list[str] = []
    for name in names:
        if IMPLIED_BY.get(name) in names:
            continue
        said = STAGE_WORDS.get(name, name)
        if said not in words:
            words.append(said)
    return words
