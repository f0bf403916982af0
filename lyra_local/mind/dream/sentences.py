"""What the dream did, in sentences a person reads: one place that turns a log event into words.

The consolidation log holds kinds, targets and counts ("gist session:9",
"world.rejected"), never a memory's text, so that forgetting reaches
everything. A person needs to read "Summarised ‘Interview prep’ (3 of 6
conversations)". The titles are looked up when the log is read (``titles``:
session id -> its name, None once forgotten), so a forgotten conversation is
"a forgotten conversation", never its old title. Pure: the web API and the
CLI call ``sentence`` with the titles they resolved.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from .events import DreamEvent

Event = Mapping[str, Any]
Titles = Mapping[int, "str | None"]
FORGOTTEN = "a forgotten conversation"

# Why a draft was refused, by the grounding's check names (mind/grounding/checks.py, Ground.reflection).
_WHY = {"budget": "the model's draft was too long", "speaker_lines": "the model's draft was a transcript",
        "empty": "the model's draft was empty", "mood_outside_vocabulary": "the model's draft named an odd mood"}
_VOICE = {"copied": "copied your words", "cut": "stopped mid-sentence"}


def conversation_ids(event: Event) -> set[int]:
    """The sessions an event names (in its target), whose titles ``sentence`` needs."""
    target = str(event.get("target") or "")
    head, _, tail = target.partition(":")
    return {int(tail)} if head in ("session", "gist") and tail.isdigit() else set()


def _title(session_id: int, titles: Titles) -> str:
    if session_id not in titles or titles[session_id] is None:
        return FORGOTTEN
    name = str(titles[session_id]).strip()
    return f"‘{name}’" if name else "an untitled conversation"


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def period(granularity: str, key: str) -> str:
    """A timeline period in words: "4 March 2024", "the week of 4 March 2024", "March 2024"."""
    try:
        if granularity == "day":
            day = date.fromisoformat(key)
            return f"{day.day} {day:%B %Y}"
        if granularity == "week":
            year, week = key.split("-W")
            monday = date.fromisocalendar(int(year), int(week), 1)
            return f"the week of {monday.day} {monday:%B %Y}"
        if granularity == "month":
            first = date.fromisoformat(f"{key}-01")
            return f"{first:%B %Y}"
    except ValueError:
        pass
    return key


def _period_of(target: str) -> str:
    granularity, _, key = target.partition(":")
    return period(granularity, key)


def _doing(resource: str, titles: Titles) -> str:
    """A unit of work (a lease's resource) as what is being done."""
    head, _, tail = resource.partition(":")
    if head == "gist" and tail.isdigit():
        return f"summarising {_title(int(tail), titles)}"
    if head == "digest":
        return f"writing the timeline for {_period_of(tail)}"
    return {"profile": "learning about you", "narrative": "rewriting the current arc", "reflect": "reflecting",
            "world": "updating the core memory", "embed": "indexing"}.get(head, "some of the work")


def _why(checks: Sequence[str], unsaid: str) -> str:
    for check in checks:
        if check in _WHY:
            return _WHY[check]
    return f"the model's draft said something {unsaid}"


def _counted(checks: Any) -> int:
    """How many were dropped: a check -> count mapping (the profile's), else one per check named."""
    if isinstance(checks, Mapping):
        return sum(int(v) for v in checks.values())
    return len(checks or ())


def _progress(detail: Mapping[str, Any]) -> str:
    done, _, total = str(detail.get("progress") or "").partition("/")
    return f" ({done} of {_plural(int(total), 'conversation')})" if done.isdigit() and total.isdigit() else ""


def _pass_start(d: Mapping[str, Any]) -> str:
    why = "because you asked" if d.get("forced") else "while things are quiet"
    ripe = int((d.get("backlog") or {}).get("ripe") or 0)
    todo = f": {_plural(ripe, 'conversation')} to summarise" if ripe else ""
    return f"Started dreaming {why}{todo}."


def _pass_end(d: Mapping[str, Any]) -> str:
    status, done = d.get("status"), int(d.get("actions") or 0)
    if status == "deferred" and d.get("error") == "stopping":  # another person's turn, or the server stopping
        return "Paused to let others dream (or the server stopped): the rest waits for the next dream."
    if status == "deferred":
        return "Stopped early: the model could not be reached. The rest waits for the next dream."
    if status == "failed":
        return "Stopped: something went wrong (the server's log says what). What was done is kept."
    return f"Finished: {_plural(done, 'thing')} done." if done else "Finished: everything was already up to date."


def _kept(d: Mapping[str, Any]) -> str:
    """What a refused reflection left: the last one, or, where there was none yet ("first"), no reflection."""
    return "Wrote no reflection yet" if d.get("first") else "Kept the last reflection"


def _voice_kept(d: Mapping[str, Any]) -> str:
    why = " and ".join(_VOICE[b] for b in d.get("because") or () if b in _VOICE) or "was not mine to say"
    return f"{_kept(d)}: the model's draft {why}."


def _reflected(d: Mapping[str, Any]) -> str:
    if d.get("fallback"):
        return f"{_kept(d)}: the model's answer could not be used."
    if "self_narrative" in (d.get("kept") or ()):
        return "Reflected on my mood; the rest of how I am stays as it was."
    return "Reflected on how I am."


def _learnt(t: Told) -> str:
    facts = len(t.detail.get("fact_ids") or ())
    if not facts:
        return f"Read {t.talk}: nothing new about you."
    return f"Learnt {_plural(facts, 'fact')} about you from {t.talk}."


@dataclass(frozen=True)
class Told:
    """An event's parts as its sentence reads them: the detail, the target, and the conversation it names."""

    detail: Mapping[str, Any]
    target: str
    titles: Titles
    talk: str  # the conversation the target names, by its title now
    checks: list[str]  # the grounding checks a draft failed
    dropped: int  # the sentences a kept draft left out

    @classmethod
    def of(cls, event: Event, titles: Titles) -> Told:
        d: Mapping[str, Any] = event.get("detail") or {}
        ids = conversation_ids(event)
        return cls(d, str(event.get("target") or ""), titles,
                   _title(next(iter(ids)), titles) if ids else "a conversation",
                   [str(c) for c in d.get("checks") or ()], int(d.get("sentences_dropped") or 0))


# Every declared kind's sentence, in one table: a test fails when a kind of ``DreamEvent`` has none.
SENTENCES: dict[DreamEvent, Callable[[Told], str]] = {
    DreamEvent.PASS_START: lambda t: _pass_start(t.detail),
    DreamEvent.PASS_END: lambda t: _pass_end(t.detail),
    DreamEvent.GIST: lambda t: f"Summarised {t.talk}{_progress(t.detail)}.",
    DreamEvent.GIST_REJECTED: lambda t: f"Wrote a summary of {t.talk} from your own words: "
                                        f"{_why(t.checks, 'the conversation does not')}.",
    DreamEvent.GIST_PRUNED: lambda t: f"Left out {_plural(t.dropped, 'sentence')} of the summary of {t.talk} that "
                                      "the conversation does not say.",
    DreamEvent.PROFILE: lambda t: _learnt(t),
    DreamEvent.PROFILE_FALLBACK: lambda t: f"Read {t.talk}: the model's answer could not be used, so no facts were "
                                           "taken.",
    DreamEvent.PROFILE_REJECTED: lambda t: f"Left out {_plural(_counted(t.detail.get('checks')), 'fact')} from "
                                           f"{t.talk} that you did not say yourself.",
    DreamEvent.DIGEST: lambda t: f"Wrote the timeline for {_period_of(t.target)}.",
    DreamEvent.DIGEST_REJECTED: lambda t: f"Wrote the timeline for {_period_of(t.target)} from the conversations' "
                                          f"own words: {_why(t.checks, 'they do not')}.",
    DreamEvent.DIGEST_PRUNED: lambda t: f"Left out {_plural(t.dropped, 'sentence')} of the timeline for "
                                        f"{_period_of(t.target)} that the conversations do not say.",
    DreamEvent.DIGEST_WAITING: lambda t: f"Left the timeline for {_period_of(t.target)} for the next dream: what it "
                                         "is built from is changing.",
    DreamEvent.DIGESTS_DELETED: lambda t: f"Removed {_plural(len(t.detail.get('periods') or ()), 'entry', 'entries')} "
                                          "from the timeline whose conversations changed or were forgotten.",
    DreamEvent.NARRATIVE: lambda t: "Rewrote the current arc.",
    DreamEvent.NARRATIVE_REJECTED: lambda t: "Wrote the current arc from the timeline's own words: "
                                             f"{_why(t.checks, 'the timeline does not')}.",
    DreamEvent.NARRATIVE_PRUNED: lambda t: f"Left out {_plural(t.dropped, 'sentence')} of the current arc that the "
                                           "timeline does not say.",
    DreamEvent.NARRATIVE_REFUSED: lambda t: "Wrote the current arc from your own words: the model's draft copied "
                                            "your words as if they were mine.",
    DreamEvent.WORLD: lambda t: ("Proposed a change to the core memory, for you to accept or not."
                                 if t.detail.get("status") == "proposed" else "Updated the core memory."),
    DreamEvent.WORLD_REJECTED: lambda t: "Left the core memory as it is: the model's draft said something the "
                                         "memory does not.",
    DreamEvent.REFLECT: lambda t: _reflected(t.detail),
    DreamEvent.REFLECT_REJECTED: lambda t: f"{_kept(t.detail)}: {_why(t.checks, 'the memory does not')}.",
    DreamEvent.REFLECT_KEPT: lambda t: _voice_kept(t.detail),
    DreamEvent.BACKOFF: lambda t: f"The model is not answering; trying again in {t.detail.get('delay_s', '?')} s.",
    DreamEvent.DEFERRED: lambda t: f"The model stayed unreachable: {_doing(t.target, t.titles)} waits for the next "
                                   "dream.",
    DreamEvent.SKIP: lambda t: f"Another dreamer is already {_doing(t.target, t.titles)}.",
    DreamEvent.WAITING: lambda t: f"Waiting for another dreamer that is {_doing(t.target, t.titles)}.",
    DreamEvent.STALE: lambda t: f"Stopped {_doing(t.target, t.titles)}: it was forgotten meanwhile, and nothing was "
                                "written.",
    DreamEvent.ERROR: lambda t: f"Could not finish {_doing(t.target, t.titles)}; it waits for the next dream.",
}


def sentence(event: Event, titles: Titles) -> str:
    """One log event as a sentence for the person (``titles``: session id -> name, None when forgotten).

    A kind no longer declared (a log written by another version) still reads as something done."""
    kind = str(event.get("kind") or "")
    try:
        declared = DreamEvent(kind)
    except ValueError:
        return f"Did some housekeeping ({kind})."
    return SENTENCES[declared](Told.of(event, titles))


def pass_summary(actions: Sequence[Mapping[str, Any]]) -> str:
    """What one pass did, counted: "summarised 3 conversations, learnt 2 facts about you, …"."""
    count = {kind: sum(1 for a in actions if a.get("kind") == kind)
             for kind in (DreamEvent.GIST, DreamEvent.DIGEST)}
    facts = sum(len(a.get("fact_ids") or ()) for a in actions if a.get("kind") == DreamEvent.PROFILE)
    kinds = {a.get("kind") for a in actions}
    parts = [f"summarised {_plural(count[DreamEvent.GIST], 'conversation')}" if count[DreamEvent.GIST] else "",
             f"learnt {_plural(facts, 'fact')} about you" if facts else "",
             f"wrote {_plural(count[DreamEvent.DIGEST], 'timeline entry', 'timeline entries')}"
             if count[DreamEvent.DIGEST] else "",
             "rewrote the current arc" if DreamEvent.NARRATIVE in kinds else "",
             "reflected" if DreamEvent.REFLECT in kinds else ""]
    return ", ".join(p for p in parts if p) or "nothing needed doing"
