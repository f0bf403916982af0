"""Who is who in recall, on real SQLite and FAISS with the real embedding model.

A chat imported from people writing to each other: the person (the ``user``
role) and Melanie, another participant (the ``assistant`` role with the
import's author label). Nobody writes their own name, and a question asks by
a nickname no message uses: recall turns the nickname into *who said it*
(``memory/speakers.py``) and searches without it. A question about the
companion ("what did you tell me ...") prefers the companion's replies; a
numeric date ("on 10.03.2023") finds that day's turns; an answer sent inside
a burst of messages is not pushed down by its burst.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from lyra_local.config import Settings
from lyra_local.memory import Memory, RecallQuery
from lyra_local.memory.speakers import KnownNames, who_said
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

from .conftest import fake_client
from .test_files_registry import wait_job
from .test_recall_stages_real import filler

pytestmark = pytest.mark.slow

START = datetime(2023, 3, 1, 18, 0, tzinfo=timezone.utc)
Turn = tuple[str, str] | tuple[str, str, str]  # (role, text) or (role, text, author)


def imported(store: Store, embedder, sessions: Sequence[Sequence[Turn]], days: Sequence[int] = (),
             gap_s: int = 60, known: KnownNames | None = None) -> Memory:
    """A store with these sessions (one per day given, default a day apart), every turn embedded."""
    memory = Memory(store, embedder, known=known)
    for n, turns in enumerate(sessions):
        day = START + timedelta(days=days[n] if days else n)
        session = store.sessions.create(f"day {n}", created_at=day.isoformat())
        memory.remember_many([NewExchange(session.id, t[0], t[1], (day + timedelta(seconds=gap_s * i)).isoformat(),
                                          author=t[2] if len(t) > 2 else None)  # type: ignore[misc]
                              for i, t in enumerate(turns)])
    return memory


def top(memory: Memory, question: str, k: int, stages: tuple[str, ...] | None = None) -> list[str]:
    return [h.content for h in memory.recall(RecallQuery(question, k=k, stages=stages))]


MEL = "Melanie"
HERS = "i painted my dog last night, he sat so still for once lol"
MINE = "i painted a sunset over the lake on saturday"
CHAT: list[Turn] = [("assistant", "hey caroline! how was your week?", MEL), ("user", "hey! pretty good"),
                    ("user", MINE), ("assistant", "omg lovely!!", MEL), ("assistant", HERS, MEL),
                    ("user", "haha amazing")]
GREETINGS: list[Turn] = [("assistant", "hi caroline! long time", MEL), ("user", "i know! work has been mad"),
                         ("assistant", "hey caroline, how did the interview go?", MEL), ("user", "went well i think")]


def test_a_nickname_no_message_uses_finds_that_persons_turns(store: Store, embedder) -> None:
    """"Mellie" is in no message: it is a nickname of Melanie (the import's label), so her turns come first;
    "carrie" (typed in lower case) is the person, whom Melanie calls Caroline."""
    memory = imported(store, embedder, [CHAT, GREETINGS, filler(10, 3)])
    assert top(memory, "What did Mellie paint?", 1) == [HERS]
    assert top(memory, "what did carrie paint?", 1) == [MINE]
    hit = memory.recall(RecallQuery("What did Mellie paint?", k=1))[0]
    assert who_said(hit.role, hit.author, memory.known) == {"kind": "participant", "name": MEL}


def test_the_recall_api_says_who_said_each_hit(store: Store, embedder) -> None:
    memory = imported(store, embedder, [CHAT, filler(6)], known=KnownNames(("Caroline",), ("Lyra",)))
    said = {h.content: who_said(h.role, h.author, memory.known) for h in memory.recall(RecallQuery("painted", k=5))}
    assert said[HERS] == {"kind": "participant", "name": MEL}
    assert said[MINE] == {"kind": "person", "name": "Caroline"}


ADVICE = "Keep one bedtime every night, no screens for an hour before, and a cool dark room."
ASKED = "i keep sleeping badly, any ideas for sleeping better?"


def test_a_question_about_the_companion_finds_its_replies(store: Store, embedder) -> None:
    talk: list[Turn] = [("user", ASKED), ("assistant", ADVICE), ("user", "thanks, sleeping better would be nice")]
    memory = imported(store, embedder, [filler(8, 1), talk, filler(8, 5)])
    # the person's own question says the same words; the companion's reply comes next, above the person's
    # later "sleeping better would be nice", which it does not when the person asks what they said
    told = top(memory, "What did you tell me about sleeping better?", 2)
    assert ADVICE in told and "thanks, sleeping better would be nice" not in told
    assert ADVICE not in top(memory, "What did I say about sleeping better?", 2)


def test_an_answer_inside_a_burst_is_not_demoted_by_its_burst(store: Store, embedder) -> None:
    """"we went hiking" / "the glacier lake hike was unreal" / "so tired": the answer, the burst's second
    message, keeps the burst's place (the burst's message that matches best by itself); the burst's other
    messages go after another day's hike."""
    answer = "the hike up to the glacier lake was unreal, totally worth the blisters"
    burst: list[Turn] = [("user", "omg we went hiking this weekend!!"), ("user", answer),
                         ("user", "so tired now lol, my legs are dead")]
    hike = "went for a long hike by the river"
    memory = imported(store, embedder, [filler(6, 2), burst, filler(6, 4), [("user", hike), *filler(2)]], gap_s=5)
    question = "how was the hike to the glacier lake?"
    assert top(memory, question, 2) == [answer, hike]


@pytest.mark.parametrize("written", ["10.03.2023", "2023-03-10", "03/10/2023", "10/03/2023"])
def test_a_numeric_date_in_a_question_finds_that_day(store: Store, embedder, written: str) -> None:
    """10 March 2023 written as people write dates; "03/10" and "10/03" are both tried, October holding nothing."""
    cooked = ["I cooked a huge dinner for my parents.", "I cooked pasta with fresh tomatoes.",
              "I cooked dumplings from scratch.", "I cooked a curry, far too spicy.", "Made lentil soup."]
    sessions: list[list[Turn]] = [[*filler(6, n), ("user", text)] for n, text in enumerate(cooked)]
    memory = imported(store, embedder, sessions, days=[2, 5, 9, 14, 20])  # 10 March is the third
    assert top(memory, f"what did I cook on {written}?", 1) == [cooked[2]]


def test_the_recall_api_says_who_said_each_hit_of_an_imported_chat(make_settings: Callable[..., Settings],
                                                                    embedder, tmp_path: Path) -> None:
    """A chat imported as Lyra JSON Lines, Melanie's messages labelled with her name: ``/api/recall`` finds her
    turns by a nickname and says she said them; the person's turns are the person's, by the configured name."""
    day = START.isoformat()
    session = {"id": "chat-1", "name": "chat with Melanie", "created_at": day,
               "messages": [{"role": t[0], "content": t[1], "created_at": day,
                             **({"author": t[2]} if len(t) > 2 else {})} for t in [*CHAT, *GREETINGS]]}
    with fake_client(make_settings('[companion]\nuser_name = "Caroline"\n'), embed=embedder) as client:
        job = client.put("/api/import", params={"filename": "chat.jsonl"}, content=json.dumps(session) + "\n")
        assert wait_job(client, job.json()["job"])["status"] == "done"
        hits = client.get("/api/recall", params={"q": "What did Mellie paint?", "k": 3}).json()["hits"]
        assert hits[0]["content"] == HERS and hits[0]["said_by"] == {"kind": "participant", "name": MEL}
        mine = next(h for h in hits if h["content"] == MINE)
        assert mine["said_by"] == {"kind": "person", "name": "Caroline"}
