"""The dream cycle's logic with scripted fakes: what is done, exactly once, and what survives failures.

The same cycle runs against the real tiny model and a real llama.cpp server in
``test_dream_real.py``; here the model is a fake so every branch is reachable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

import pytest

from lyra_local.config import Settings
from lyra_local.errors import ModelUnavailable
from lyra_local.llm.base import GenerationOptions, Message
from lyra_local.llm.local import LocalEmbedder
from lyra_local.mind import Dreamer
from lyra_local.mind.dream.backlog import sense
from lyra_local.mind.dream.drives import compute_drives
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

from .fakes import FakeChatModel, FakeEmbedder

FACTS = {"berlin": ("home city", "Berlin"), "lisbon": ("home city", "Lisbon"), "miso": ("pet", "cat Miso"),
         "violin": ("hobbies", "violin")}


def respond(messages: Sequence[Message], options: GenerationOptions | None) -> str:
    """A stand-in summary model: summaries echo the user's lines, the profile reads known words."""
    material, _, system = messages[-1]["content"].rpartition("\n\n")
    if options is not None and options.json_schema is not None:
        if "standing facts" in system:
            said = material.split(" wrote:\n", 1)[1].splitlines()  # the person's own turns, one a line
            facts = [{"key": k, "value": v, "quote": line.removeprefix("- ")}
                     for line in said for word, (k, v) in FACTS.items() if word in line.lower()]
            return json.dumps({"facts": facts})
        return json.dumps({"mood": "content", "energy": 0.8, "self_narrative": "I listened a lot today.",
                           "reflections": ["Sam is settling in."]})
    if "core memory" in system:  # the world state: the standing facts it was shown
        return "\n".join(line for line in material.splitlines() if line.startswith("- ")) or "# Now"
    lines = [line.split(": ", 1)[1] for line in material.splitlines() if line.startswith("Sam: ")]
    return " ".join(lines) or " ".join(material.split()[-40:])


def add_session(store: Store, name: str, day: str, turns: Sequence[str]) -> int:
    session = store.sessions.create(name, created_at=f"{day}T09:00:00+00:00")
    with store.write() as conn:
        store.exchanges.insert(conn, [NewExchange(session.id, "user" if i % 2 == 0 else "assistant", text,
                                                  f"{day}T{9 + i // 60:02d}:{i % 60:02d}:00+00:00")
                                      for i, text in enumerate(turns)], None, None)
    return session.id


@pytest.fixture()
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings('[companion]\nuser_name = "Sam"\n[dream]\nsession_idle_s = 0\n')


def dreamer(store: Store, settings: Settings, model: FakeChatModel | None = None,
            embedder: LocalEmbedder | None = None, **kw: object) -> Dreamer:
    """A dreamer on the scripted model; the profile's gate fits keys by meaning, so a test of what the profile
    learns passes the real embedder."""
    return Dreamer(store, model or FakeChatModel(respond=respond), embedder or FakeEmbedder(), settings, **kw)  # type: ignore[arg-type]


def test_a_forced_pass_clears_the_backlog_and_a_second_does_nothing(store: Store, settings: Settings,
        embedder: LocalEmbedder) -> None:
    a = add_session(store, "moving", "2024-03-04", ["I live in Berlin with my cat Miso", "How lovely!"])
    b = add_session(store, "plans", "2024-03-04", ["Thinking about the summer", "Tell me more"])
    add_session(store, "later", "2024-04-20", ["Work was long today", "Rest well"])
    before = compute_drives(sense(store, settings.dream))
    assert before["continuity"] > 0.5 and before["stability"] < 0.5

    model = FakeChatModel(respond=respond)
    report = dreamer(store, settings, model, embedder).run_pass(force=True)
    assert report.status == "done"
    assert report.drives_after["continuity"] == report.drives_after["coherence"] == 0
    assert report.drives_after["curiosity"] == 0 and report.drives_after["stability"] == 1
    gist = store.derived.gist(a)
    assert gist is not None and "Berlin" in gist.content
    assert {(f.key, f.value) for f in store.derived.profile()} == {("home city", "Berlin"), ("pet", "cat Miso")}
    periods = {(d.granularity, d.period) for d in store.derived.digests()}
    assert periods == {("day", "2024-03-04"), ("day", "2024-04-20"), ("week", "2024-W10"), ("week", "2024-W16"),
                       ("month", "2024-03"), ("month", "2024-04")}
    day = next(d for d in store.derived.digests("day") if d.period == "2024-03-04")
    assert day.source_count == 2 and "Berlin" in day.content and "summer" in day.content
    assert store.derived.narrative() and store.derived.self_state()["mood"] == "content"  # type: ignore[index]
    assert store.dreams.drives() == report.drives_after
    assert sense(store, settings.dream).empty
    assert b in {int(e["target"].split(":")[1]) for e in store.coord.events() if e["kind"] == "gist"}

    calls = len(model.history)
    second = dreamer(store, settings, model, embedder).run_pass(force=True)
    assert second.actions == [] and len(model.history) == calls


def test_the_dream_never_reads_an_off_the_record_conversation(store: Store, settings: Settings,
        embedder: LocalEmbedder) -> None:
    kept = add_session(store, "moving", "2024-03-04", ["I live in Berlin with my cat Miso", "How lovely!"])
    off = store.sessions.create("secret", created_at="2024-03-04T10:00:00+00:00", remember=False)
    said = ["I actually live in Lisbon", "Oh, Lisbon!", "Yes, Lisbon since May", "Noted"] * 3
    with store.write() as conn:
        store.exchanges.insert(conn, [NewExchange(off.id, "user" if i % 2 == 0 else "assistant", text,
                                                  f"2024-03-04T10:{i:02d}:00+00:00") for i, text in enumerate(said)],
                               None, None)
    model = FakeChatModel(respond=respond)
    assert dreamer(store, settings, model, embedder).run_pass(force=True).status == "done"
    assert store.derived.gist(kept) is not None and store.derived.gist(off.id) is None
    assert {(f.key, f.value) for f in store.derived.profile()} == {("home city", "Berlin"), ("pet", "cat Miso")}
    shown = " ".join(m["content"] for call in model.history for m in call[0])
    assert "Lisbon" not in shown  # not in any prompt of the pass: gists, digests, narrative, reflection


def test_contradiction_newer_fact_wins_and_the_older_is_history(store: Store, settings: Settings,
        embedder: LocalEmbedder) -> None:
    add_session(store, "home", "2024-01-10", ["I live in Berlin", "Nice city"])
    dreamer(store, settings, embedder=embedder).run_pass(force=True)
    add_session(store, "news", "2024-06-02", ["I moved to Lisbon last week", "Exciting!"])
    dreamer(store, settings, embedder=embedder).run_pass(force=True)

    assert [(f.key, f.value) for f in store.derived.profile()] == [("home city", "Lisbon")]
    history = store.derived.fact_history("home city")
    assert [f.value for f in history] == ["Berlin", "Lisbon"]
    assert history[0].superseded_by == history[1].id and history[0].superseded_at is not None


def test_an_older_conversation_consolidated_later_does_not_override_a_newer_fact(
        store: Store, settings: Settings, embedder: LocalEmbedder) -> None:
    add_session(store, "news", "2024-06-02", ["I moved to Lisbon last week", "Exciting!"])
    dreamer(store, settings, embedder=embedder).run_pass(force=True)
    add_session(store, "imported", "2021-05-01", ["I live in Berlin", "Nice"])  # an import of old history
    dreamer(store, settings, embedder=embedder).run_pass(force=True)
    assert [(f.key, f.value) for f in store.derived.profile()] == [("home city", "Lisbon")]
    assert [f.value for f in store.derived.fact_history("home city")] == ["Lisbon", "Berlin"]
    assert {d.period for d in store.derived.digests("month")} == {"2021-05", "2024-06"}


def test_long_session_is_chunked_by_tokens_and_merged(store: Store, settings: Settings) -> None:
    turns = [f"On day {i} I walked {i} kilometres along the river near Miso's vet" for i in range(60)]
    sid = add_session(store, "walks", "2024-05-01", turns)
    model = FakeChatModel(n_ctx=400, respond=respond)
    report = dreamer(store, settings, model).run_pass(force=True)
    gist_action = next(a for a in report.actions if a["kind"] == "gist")
    assert gist_action["chunks"] >= 3 and gist_action["turns"] == 60
    for messages, options in model.history:  # every request fitted the model's context
        assert sum(model.count_tokens(m["content"]) for m in messages) + (options.max_tokens or 0) <= 400
    merges = [m for m, _ in model.history if "are partial summaries" in m[-1]["content"]]
    assert merges and store.derived.gist(sid) is not None


def test_new_turns_update_the_gist_once_enough_accumulate(store: Store, make_settings: Callable[..., Settings]) -> None:
    settings = make_settings('[dream]\nresummarize_after = 4\nsession_idle_s = 3600\n')
    sid = add_session(store, "chat", "2024-05-01", ["I live in Berlin", "ok", "my cat is Miso", "ok"])
    dreamer(store, settings).run_pass()
    first = store.derived.gist(sid)
    assert first is not None
    with store.write() as conn:
        store.exchanges.insert(conn, [NewExchange(sid, "user", "I moved to Lisbon")], None, None)
    assert not dreamer(store, settings).run_pass().actions or store.derived.gist(sid) == first  # not ripe: 1 < 4
    assert store.derived.gist(sid) == first
    with store.write() as conn:
        store.exchanges.insert(conn, [NewExchange(sid, "assistant", "wow"), NewExchange(sid, "user", "yes"),
                                      NewExchange(sid, "assistant", "nice")], None, None)
    dreamer(store, settings).run_pass()
    updated = store.derived.gist(sid)
    assert updated is not None and updated.covers_upto > first.covers_upto and "Lisbon" in updated.content


class Flaky(FakeChatModel):
    """Unreachable for the first ``down`` calls, like a restarting server."""

    def __init__(self, down: int) -> None:
        super().__init__(respond=respond)
        self.down = down

    def _next(self, messages: Sequence[Message], options: GenerationOptions | None) -> str:
        if self.down > 0:
            self.down -= 1
            raise ModelUnavailable("model server at http://gpu-box:8080 is not reachable")
        return super()._next(messages, options)


def fast_retry(settings: Settings, attempts: int) -> Settings:
    dream = settings.dream.model_copy(update={"retry": settings.dream.retry.model_copy(
        update={"max_attempts": attempts, "initial_delay_s": 0.01, "max_delay_s": 0.02})})
    return settings.model_copy(update={"dream": dream})


def test_backs_off_while_the_server_is_down_then_completes(store: Store, settings: Settings) -> None:
    sid = add_session(store, "home", "2024-01-10", ["I live in Berlin", "Nice city"])
    report = dreamer(store, fast_retry(settings, 5), Flaky(down=3)).run_pass(force=True)
    assert report.status == "done"
    assert [e["kind"] for e in store.coord.events()].count("backoff") == 3
    assert store.derived.gist(sid) is not None


def test_gives_up_after_the_bound_leaving_nothing_half_written(store: Store, settings: Settings) -> None:
    sid = add_session(store, "home", "2024-01-10", ["I live in Berlin", "Nice city"])
    report = dreamer(store, fast_retry(settings, 3), Flaky(down=100)).run_pass(force=True)
    assert report.status == "deferred" and "unreachable" in (report.error or "")
    assert store.derived.gist(sid) is None and store.derived.profile() == []
    assert store.coord.leases() == []  # released for whoever comes next
    assert dreamer(store, settings).run_pass(force=True).status == "done"
    assert store.derived.gist(sid) is not None and store.derived.profile()


def test_a_unit_leased_by_another_dreamer_is_skipped(store: Store, settings: Settings) -> None:
    sid = add_session(store, "home", "2024-01-10", ["I live in Berlin", "Nice city"])
    assert store.coord.acquire(f"gist:{sid}", "other-dreamer", 60).ok
    dreamer(store, settings).run_pass(force=True)
    assert store.derived.gist(sid) is None
    assert any(e["kind"] == "skip" and e["detail"]["holder"] == "other-dreamer" for e in store.coord.events())
    store.coord.release(f"gist:{sid}", "other-dreamer")
    # a crashed holder's lease expires and is reclaimed
    assert store.coord.acquire(f"gist:{sid}", "crashed", 0.01).ok
    import time
    time.sleep(0.05)
    dreamer(store, settings).run_pass(force=True)
    assert store.derived.gist(sid) is not None


def test_forgetting_a_session_rebuilds_what_was_built_from_it(store: Store, settings: Settings) -> None:
    add_session(store, "home", "2024-01-10", ["I live in Berlin", "Nice city"])
    secret = add_session(store, "pet", "2024-01-10", ["my cat is Miso", "cute"])
    dreamer(store, settings).run_pass(force=True)
    assert "Miso" in next(d for d in store.derived.digests("day")).content
    from lyra_local.store.forget.erase import forget_sessions
    forget_sessions(store, [secret])
    assert [f.key for f in store.derived.profile()] == ["home city"]
    dreamer(store, settings).run_pass(force=True)
    assert all("Miso" not in d.content for d in store.derived.digests())
    assert "Miso" not in (store.derived.narrative() or "")
    assert sense(store, settings.dream).empty


def test_reflection_falls_back_when_the_json_does_not_validate(store: Store, settings: Settings) -> None:
    add_session(store, "home", "2024-01-10", ["I live in Berlin", "Nice city"])

    def broken(messages: Sequence[Message], options: GenerationOptions | None) -> str:
        if options is not None and options.json_schema is not None and "your mood" in messages[-1]["content"]:
            return '{"mood": "", "energy": "very"'
        return respond(messages, options)

    report = dreamer(store, settings, FakeChatModel(respond=broken)).run_pass(force=True)
    state = store.derived.self_state()
    assert report.status == "done" and state is not None and state["fallback"] is True
    assert state["energy"] == 0.5 and state["basis"]["exchange"] > 0
    assert any(a["kind"] == "reflect" and a["fallback"] for a in report.actions)


def test_the_schema_is_sent_to_the_model(store: Store, settings: Settings) -> None:
    add_session(store, "home", "2024-01-10", ["I live in Berlin", "Nice city"])
    model = FakeChatModel(respond=respond)
    dreamer(store, settings, model).run_pass(force=True)
    schemas = [o.json_schema for _, o in model.history if o is not None and o.json_schema]
    assert any(s.get("required") == ["facts"] for s in schemas)
    assert any(set(s.get("required", [])) == {"mood", "energy", "self_narrative", "reflections"} for s in schemas)
    assert re.search(r"\bSam\b", model.history[0][0][0]["content"])


def test_a_scheduled_pass_with_nothing_to_do_leaves_no_record(store: Store, settings: Settings) -> None:
    report = dreamer(store, settings).run_pass()
    assert report.status == "idle" and store.dreams.last() is None and store.coord.events() == []


def test_a_pass_after_the_person_deleted_a_day_digest_rolls_up_the_other_days(store: Store,
                                                                               settings: Settings) -> None:
    """Found by the stateful test: with a day's digest deleted, its week was still planned over it, and the
    pass failed with LookupError on every run."""
    add_session(store, "monday", "2024-03-04", ["I live in Berlin with my cat Miso", "How lovely!"])
    add_session(store, "tuesday", "2024-03-05", ["Thinking about Lisbon", "Tell me more"])
    assert dreamer(store, settings).run_pass(force=True).status == "done"
    monday = next(d for d in store.derived.digests("day") if d.period == "2024-03-04")
    store.corrections.delete_digest(monday.id)
    assert dreamer(store, settings).run_pass(force=True).status == "done"
    days = [d.period for d in store.derived.digests("day")]
    week = store.derived.digests("week")
    assert days == ["2024-03-05"] and len(week) == 1 and "Berlin" not in week[0].content
    store.corrections.delete_digest(next(d.id for d in store.derived.digests("day")))
    assert dreamer(store, settings).run_pass(force=True).status == "done"
    assert store.derived.digests() == []  # no day left to roll up: the week and month went too
