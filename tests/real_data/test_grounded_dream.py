"""A forced dream with the default models over real conversation (LoCoMo): nothing it writes is invented.

The first four sessions of LoCoMo's first conversation (``locomo-dev.json`` in the folder
``LYRA_REAL_DATA`` names: written outside this project under its own licence, never copied into it),
imported as the recall evaluation imports LoCoMo (``scripts/recall_sets.py``). The checks here are
the test's own, simpler than the dream's: a transcript line, or a name or number that no source says.
"""

from __future__ import annotations

import json
import re
import sys

import pytest

from lyra_local.config import load_settings
from lyra_local.llm.registry import Models
from lyra_local.mind import Dreamer
from lyra_local.store import Store
from lyra_local.transfer.importer import import_source
from lyra_local.transfer.sources import open_source

from ..conftest import MODELS_DIR, REPO
from . import real_data

pytestmark = [pytest.mark.slow, pytest.mark.models]
LOCOMO = "locomo-dev.json"  # LoCoMo's dev half, in the folder LYRA_REAL_DATA names: never in the repository
TRANSCRIPT_LINE = re.compile(r"(?:^|[.!?\"“]\s*)([A-Z][a-z]+|[Uu]ser|[Aa]ssistant|Lyra)\s*:\s", re.M)
NAME_OR_NUMBER = re.compile(r"\b(?:[A-Z][a-z]+|\w*\d\w*)\b")
SENTENCE_START = re.compile(r"(?:^|[.!?…“”\"’)]\s+)([A-Z][a-z]+)", re.M)  # also after a closing quote


def words(texts: list[str]) -> set[str]:
    return {w.lower() for t in texts for w in re.findall(r"\w+", t)}


def invented(text: str, sources: list[str]) -> set[str]:
    """Names and numbers in ``text`` that no source says (a capitalized word opening a sentence is let be).

    A session's name and date are sources too: the summary model is shown them.
    """
    said = words(sources)
    openers = set(SENTENCE_START.findall(text))
    return {w for w in NAME_OR_NUMBER.findall(text) if w.lower() not in said and w not in openers}


@pytest.fixture(scope="module")
def dreamt(tmp_path_factory: pytest.TempPathFactory):
    sys.path.insert(0, str(REPO / "scripts"))
    from recall_sets import locomo  # the conversion the recall evaluation uses

    first = next(locomo(real_data(LOCOMO)))
    first.sessions = first.sessions[:4]
    tmp = tmp_path_factory.mktemp("locomo")
    (tmp / "in.jsonl").write_text(first.jsonl(), encoding="utf-8")
    settings = load_settings(None, env={"LYRA_DATA_DIR": str(tmp / "data"), "LYRA_MODELS_DIR": str(MODELS_DIR),
                                        "LYRA_DREAM__SESSION_IDLE_S": "0"})
    models = Models(settings)
    store = Store(tmp / "data")
    import_source(store, models.embed, open_source(tmp / "in.jsonl", "lyra"))
    report = Dreamer(store, models.summary, models.embed, settings).run_pass(force=True)
    assert report.status == "done"
    yield store
    store.close()
    models.close()


def test_every_session_has_a_gist_and_none_invents_or_transcribes(dreamt: Store) -> None:
    sessions = dreamt.sessions.list(limit=100)
    assert len(sessions) == 4
    for session in sessions:
        gist = dreamt.derived.gist(session.id)
        assert gist is not None and gist.content.strip()
        turns = [t.content for t in dreamt.exchanges.history(session.id)]
        assert not TRANSCRIPT_LINE.search(gist.content), gist.content
        assert invented(gist.content, turns) == set(), gist.content


def test_digests_narrative_and_dream_world_versions_say_only_what_was_said(dreamt: Store) -> None:
    everything = [t.content for s in dreamt.sessions.list(limit=100) for t in dreamt.exchanges.history(s.id)]
    written = [d.content for d in dreamt.derived.digests()]
    assert written  # days, weeks, months
    narrative = dreamt.derived.narrative()
    written += [narrative] if narrative else []
    written += [w.content for w in dreamt.coord.world_history() if w.author == "dream"]
    for text in written:
        assert not TRANSCRIPT_LINE.search(text), text
        assert invented(text, everything) == set(), text


def test_every_current_fact_is_in_the_persons_own_turns(dreamt: Store) -> None:
    own = " ".join(t.content.lower() for s in dreamt.sessions.list(limit=100)
                   for t in dreamt.exchanges.history(s.id) if t.role == "user")
    for fact in dreamt.derived.profile():
        assert all(w in own for w in re.findall(r"\w+", fact.value.lower())), (fact.key, fact.value)


def test_every_fact_is_one_the_gold_observations_support_and_one_is_learnt(dreamt: Store) -> None:
    """Truth, not presence: each fact's source turn is the evidence of a gold observation of the person that
    holds its value (``scripts/gold.py``); the floor learns at least one ("my home country, Sweden")."""
    from gold import fact_supported, observations  # scripts/, on the path since the fixture

    gold = observations(real_data(LOCOMO))["conv-26"]
    source_of = {turn_id: source for source, turn_id in dreamt.exchanges.ids_by_source().items()}
    facts = [f for key in {f.key for f in dreamt.derived.profile()} for f in dreamt.derived.fact_history(key)]
    assert facts
    for fact in facts:
        said = [source_of[t["id"]] for t in dreamt.corrections.sources("fact", fact.id) if t["role"] == "user"]
        assert any(fact_supported(fact.key, fact.value, s, "Caroline", {"Caroline", "Melanie", "Lyra"}, gold)
                   for s in said), (fact.key, fact.value, said)


def test_the_self_state_is_not_invented(dreamt: Store) -> None:
    state = dreamt.derived.self_state() or {}
    everything = [t.content for s in dreamt.sessions.list(limit=100) for t in dreamt.exchanges.history(s.id)]
    for text in [state.get("self_narrative", ""), *state.get("reflections", [])]:
        assert invented(text, everything) == set(), text
    assert json.dumps(state)  # stored as JSON
