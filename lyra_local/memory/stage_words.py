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

# Each recall stage's name (``Stage.name``) -> what it did, said of the memory it found or raised.
STAGE_WORDS: Mapping[str, str] = MappingProxyType({
    # stages that find memories (they put them in the pool, so a trace names them)
    "dense": "found by meaning",  # nearest vectors: meaning without shared words
    "bm25": "found by words",  # full text (BM25) over the memory alone: it shares words with your message
    "context": "found by words, read with the turn before it",  # full text over a turn read after the one before
    "rare": "found by a rare word (a name, a number)",  # full text on the question's rare words only
    "date": "said in the days your message names",  # a question naming a period looks among its turns
    "answer": "the answer to a matching question",  # the turn after a matching turn that asks
    "gists": "from a conversation whose summary matched",  # the optional stage: sessions whose gists match
    # stages that re-rank what was found (never named by a trace today; worded so a new use reads right)
    "neighbours": "close in meaning to the turns around it",
    "speaker": "said by the one your message is about",
    "lexical_trust": "its words weighed by how specific they are",
    "session": "from a conversation with other matching turns",
    "current": "the latest of what matched",
    "rerank": "re-read beside your message",
    "bursts": "part of a burst of messages",
    "diversity": "not a repeat of another memory",
    # how the context took a digest that recall did not rank (the recent turns' "session" is the stage above's
    # name too: their layer, "recent", says what they are, and the page leaves them out)
    "timeline": "from your timeline",
})

# A context layer's name (``context.TraceEntry.layer``) -> what it is.
LAYER_WORDS: Mapping[str, str] = MappingProxyType({
    "recalled": "A moment remembered",
    "gists": "A past conversation",
    "digests": "Your timeline",
    "session_gist": "Earlier in this conversation",
    "recent": "This conversation",
})


def found_by(stages: str) -> list[str]:
    """A trace's ``stage`` ("dense+bm25+answer") in words, each once, in order; a name with no words is kept as
    it is (a trace written before the name was worded must still show)."""
    words: list[str] = []
    for name in filter(None, stages.split("+")):
        said = STAGE_WORDS.get(name, name)
        if said not in words:
            words.append(said)
    return words
