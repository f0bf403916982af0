"""Recall stages: each one idea about where the evidence is, one class each, measured by switching it off.

A search runs in four steps, and a stage takes part in the ones it defines:

1. ``gather``: add candidates to the pool (nearest vectors, full-text matches,
   the turns of a period the question names, ...);
2. ``score``: give every pool member a raw score for this stage (a signal);
   signals are scaled to 0-1 over the pool and summed with the stages' weights;
3. ``adjust``: change the fused scores using what the pool shows (a session
   where many strong turns are, the answer to a question that matched);
4. ``reorder``: the final order of the hits (repeats after distinct hits).

``STAGES`` lists the default recall, in order; ``OPTIONAL`` those measured and
left off: the one registry of recall stages. The stages live by what they look
at (``stages_find``, ``stages_who``, ``stages_order``; what they share in
``stage_base``). ``scripts/eval_recall.py`` measures each one switched off (or
on) on real conversations (LoCoMo, MemoryBank) and on our own set.
"""

from __future__ import annotations

from collections.abc import Sequence

from .stage_base import KeyQuestion, Scaling, Search, Stage, Tuning, scale, when
from .stages_find import Dates, Dense, DenseContext, Expansion, FullText, GistSessions, LexicalTrust, RareWords
from .stages_order import Answers, Bursts, Currentness, Diversity, Rerank, Sessions, repeat_key, split_repeats
from .stages_who import Speaker, Statements, named_speakers

__all__ = ["ALWAYS", "OPTIONAL", "STAGES", "KeyQuestion", "Scaling", "Search", "Stage", "Tuning", "chosen",
           "named_speakers", "optional_stages", "repeat_key", "scale", "split_repeats", "stage_names", "when"]

# Every stage, in the order the pipeline runs each step through them (a stage left off keeps its place when named).
PIPELINE: tuple[Stage, ...] = (Dense(), FullText("bm25", "turn"), FullText("context", "context"), RareWords(), Dates(),
                               Statements(), DenseContext(), Speaker(), LexicalTrust(), Sessions(), Answers(),
                               Currentness(), Rerank(), Bursts(), Diversity(), GistSessions(), Expansion())
# Measured and left off (``scripts/eval_recall.py`` on LoCoMo's dev half and on locomo-people, the same
# conversations as people write them, in one run; docs/benchmarks.md): ``neighbours`` because both sets gain
# without it, ``gists`` because it gains nothing on either and rests on faithful gists, ``expand`` because it
# loses on both for the questions whose evidence spans three sessions, the ones it was built for.
LEFT_OFF = frozenset({"neighbours", "gists", "expand"})
STAGES: tuple[Stage, ...] = tuple(stage for stage in PIPELINE if stage.name not in LEFT_OFF)
OPTIONAL: tuple[Stage, ...] = tuple(stage for stage in PIPELINE if stage.name in LEFT_OFF)
ALWAYS = ("dense", "bm25")  # what the plain modes are made of


def stage_names() -> list[str]:
    """The default recall's stages, by name."""
    return [stage.name for stage in STAGES]


def optional_stages() -> list[str]:
    return [stage.name for stage in OPTIONAL]


def chosen(names: Sequence[str] | None) -> list[Stage]:
    """The stages to run, in pipeline order: the default set, or the ones named."""
    if names is None:
        return list(STAGES)
    known = {stage.name: stage for stage in (*STAGES, *OPTIONAL)}
    unknown = set(names) - set(known)
    if unknown:
        raise ValueError(f"unknown recall stage(s): {', '.join(sorted(unknown))}; known: {', '.join(known)}")
    gathering = [stage for stage in PIPELINE if type(stage).gather is not Stage.gather]
    order = [*gathering, *(stage for stage in PIPELINE if stage not in gathering)]  # gathering stages first
    return [stage for stage in order if stage.name in names]


