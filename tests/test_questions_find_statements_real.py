"""Ask in questions, find statements, with the real embedding model: a new person imports a ChatGPT
history in which they said "I teach chemistry at a secondary school in Leeds" in passing; searching and
recalling "what is my job?" finds it, above the assistant's "my job is to help you" and their sister's job.

The question and its answer share no word and are far apart by meaning (a question is nearest other questions):
recall's ``statement`` stage searches with the job's statements (``memory/keys.py``), and the search shows what
it finds although it is under the meaning floor. ``scripts/eval_question_search.py`` measures the same on LoCoMo
and on ``eval/question_statements.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from lyra_local.config import Settings
from lyra_local.llm.local import LocalEmbedder
from lyra_local.memory import Memory, RecallQuery
from lyra_local.memory.recall import without
from lyra_local.memory.search import meaning_floor
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

from .chatgpt_export import T0, conversation, write_export
from .conftest import fake_client
from .test_files_registry import wait_job

JOB = "I teach chemistry at a secondary school in Leeds"
HOME = "i live in headingley now, a little flat near the park, the walls are paper thin lol"
ITS_JOB = "As an AI assistant, my job is to help you with whatever you need: writing, planning, ideas."
SISTERS_JOB = "ok cool. my sister works as a nurse in bristol and she's knackered, any tips for night shifts"
MATES_HOME = "my mate dave lives in manchester, he keeps telling me to visit"
CHATS: list[tuple[str, list[tuple[str, str]]]] = [
    ("Lesson ideas", [("user", JOB), ("assistant", "That's great! How can I help you with your teaching today?"),
                      ("user", "can u give me a starter activity on electrolysis for year 10, they get bored fast"),
                      ("assistant", "A quiz: three photos of electroplated objects, guess how they were made.")]),
    ("What can you do", [("user", "hey, what can you actually do?"), ("assistant", ITS_JOB), ("user", SISTERS_JOB),
                         ("assistant", "Blackout curtains and a fixed sleep window help a lot with night shifts.")]),
    ("Flat", [("user", HOME), ("assistant", "Paper-thin walls are the worst. Earplugs might help."),
              ("user", MATES_HOME), ("assistant", "Manchester is a fun day out!")]),
    ("Banana bread", [("user", "whats a good recipe for banana bread"),
                      ("assistant", "Mash three ripe bananas, mix with butter, sugar, an egg and flour.")]),
    ("Phone", [("user", "lol my phone screen cracked again"), ("assistant", "A screen protector might help.")]),
    ("Cold", [("user", "i think i'm getting a cold"), ("assistant", "Rest, fluids and something warm.")]),
    ("Podcasts", [("user", "any podcast recs"), ("assistant", "Try 'No Such Thing As A Fish' for fun facts.")]),
    ("Train", [("user", "the train was cancelled so i walked, 40 mins"),
               ("assistant", "That's a good bit of exercise at least.")]),
    ("Wifi", [("user", "the wifi keeps dropping"), ("assistant", "Try restarting the router.")]),
]


@pytest.fixture
def client(make_settings: Callable[..., Settings], embedder: LocalEmbedder,
           tmp_path: Path) -> Iterator[TestClient]:
    """The real app on the real embedding model, with the person's ChatGPT history imported."""
    export = write_export(tmp_path / "export.zip", [conversation(f"c{n}", title, turns, start=T0 + 86400 * n)
                                                    for n, (title, turns) in enumerate(CHATS)])
    with fake_client(make_settings(), embed=embedder) as test_client:
        job = test_client.put("/api/import", params={"filename": "export.zip"}, content=export.read_bytes())
        assert wait_job(test_client, job.json()["job"])["status"] == "done"
        yield test_client


def searched(client: TestClient, question: str) -> list[tuple[str, str]]:
    results = client.get("/api/search", params={"q": question, "tier": "exchange"}).json()["results"]
    return [(r["content"], r["matched"]) for r in results]


def recalled(client: TestClient, question: str) -> list[str]:
    return [h["content"] for h in client.get("/api/recall", params={"q": question, "k": 5}).json()["hits"]]


def before(found: list[str], first: str, *others: str) -> bool:
    """``first`` is found, and ahead of each of ``others`` that is."""
    return first in found and all(other not in found or found.index(first) < found.index(other) for other in others)


@pytest.mark.parametrize("question", ["what is my job?", "What do I do for a living?"])
def test_asking_for_the_job_finds_the_statement_above_the_other_jobs(client: TestClient, question: str) -> None:
    found = searched(client, question)
    texts = [text for text, _ in found]
    assert (JOB, "meaning") in found[:3], found
    assert before(texts, JOB, ITS_JOB, SISTERS_JOB), found
    hits = recalled(client, question)
    assert JOB in hits[:3] and before(hits, JOB, ITS_JOB, SISTERS_JOB), hits


def test_asking_where_they_live_finds_where_they_said_they_live(client: TestClient) -> None:
    found = searched(client, "where do I live?")
    assert found and found[0][0] == HOME, found  # "live" is its word too: matched by words
    assert before([text for text, _ in found], HOME, MATES_HOME), found
    hits = recalled(client, "where do I live?")
    assert hits[0] == HOME, hits


def test_without_the_statement_stage_the_job_is_under_the_floor_and_the_distractors_rank_first(
        store: Store, embedder: LocalEmbedder) -> None:
    """What the stage changes: the question alone is nearer the assistant's "my job" than the person's job, and
    the person's job is further from the question than the search's meaning floor."""
    memory = Memory(store, embedder)
    for n, (title, turns) in enumerate(CHATS):
        session = store.sessions.create(title, created_at=f"2023-05-{n + 1:02d}T09:00:00+00:00")
        memory.remember_many([NewExchange(session.id, role, text, f"2023-05-{n + 1:02d}T09:{i:02d}:00+00:00")
                              for i, (role, text) in enumerate(turns)])
    question = "what is my job?"
    plain = [h.content for h in memory.recall(RecallQuery(question, k=5, stages=without("statement")))]
    assert before(plain, ITS_JOB, JOB), plain
    vectors = np.asarray(embedder.embed([question, JOB]), dtype=np.float32)
    assert float(vectors[0] @ vectors[1]) < meaning_floor(embedder.name, question)
    hits = memory.recall(RecallQuery(question, k=5))
    assert hits[0].content == JOB and "statement" in hits[0].stages, [(h.content, h.stages) for h in hits]
