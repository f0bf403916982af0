"""The dream's event kinds: every kind the dream cycle logs, declared once.

The consolidation log, ``/api/dream/events`` and the page all carry a kind as
its plain string ("gist.rejected"), so ``DreamEvent`` is a ``StrEnum``: the
stored log and the API read plain strings, while the code that emits an
event can only name a declared kind (mypy refuses any other string). Each kind
has its sentence in ``dream_sentences.SENTENCES``, and a test fails when a
kind is declared without one. Pure: no imports from the rest of Lyra.
"""

from __future__ import annotations

from enum import StrEnum


class DreamEvent(StrEnum):
    """One kind of event in the dream's log; its value is what the log and the API carry."""

    PASS_START = "pass.start"
    PASS_END = "pass.end"
    GIST = "gist"
    GIST_REJECTED = "gist.rejected"
    GIST_PRUNED = "gist.pruned"
    PROFILE = "profile"
    PROFILE_FALLBACK = "profile.fallback"
    PROFILE_REJECTED = "profile.rejected"
    DIGEST = "digest"
    DIGEST_REJECTED = "digest.rejected"
    DIGEST_PRUNED = "digest.pruned"
    DIGEST_WAITING = "digest.waiting"
    DIGESTS_DELETED = "digests.deleted"
    NARRATIVE = "narrative"
    NARRATIVE_REJECTED = "narrative.rejected"
    NARRATIVE_PRUNED = "narrative.pruned"
    NARRATIVE_REFUSED = "narrative.refused"
    WORLD = "world"
    WORLD_REJECTED = "world.rejected"
    REFLECT = "reflect"
    REFLECT_REJECTED = "reflect.rejected"
    REFLECT_KEPT = "reflect.kept"
    BACKOFF = "backoff"
    DEFERRED = "deferred"
    SKIP = "skip"
    WAITING = "waiting"
    STALE = "stale"
    ERROR = "error"
