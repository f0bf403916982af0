"""Recall evaluation sets as Lyra sees them: sessions to import, and questions with their evidence.

Three sets, each a list of *memories* (one person's history: a fresh data
directory each), every turn carrying a ``source_id`` so a question's evidence
can be found among the imported exchanges whatever ids they get:

- ``locomo-dev``: LoCoMo's dev half (``../shared/data/locomo-dev.json``),
  converted exactly as ``../shared/data/README.md`` says: one session per
  LoCoMo session with its real date, ``speaker_a`` as the user, content
  ``"<speaker>: <text>"`` plus ``[shares a photo: <caption>]``, turn i at the
  session's time plus min(i, 59) seconds; the evidence is the ``dia_id``s of
  each question of categories 1-4 (entries holding several ids are split, and
  ids naming no turn are dropped).
- ``memorybank``: MemoryBank's 15 people (``../shared/data/memorybank-en.json``),
  one session per day, each ``{query, response}`` a user and an assistant turn;
  the evidence turns are our labels in ``eval/memorybank_evidence.json``
  (``eval/memorybank_evidence.md`` says how they were decided).
- ``synthetic``: our own set (``eval/recall_set.json``, ``scripts/make_eval_set.py``),
  dated so its last session was yesterday. A regression test, not evidence.
- ``locomo-messy``, ``memorybank-messy``: the first two as real people type
  (bursts, no ``Name:`` label, lower case, typos, emoji, nicknames;
  ``scripts/messy_sets.py``), every evidence label kept. Our own perturbation:
  a regression test of robustness, not evidence.
- ``locomo-people``: LoCoMo's dev half as its two people wrote it: no label,
  in bursts, the other speaker an imported chat's participant (``author``), the
  questions asking by names and nicknames no turn uses (``scripts/people_sets.py``,
  ``eval/locomo_people.json``). A dev set for knowing who is who.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
DATASETS = ("locomo-dev", "memorybank", "synthetic", "locomo-messy", "memorybank-messy", "locomo-people")
MESSY = {"locomo-messy": "locomo-dev", "memorybank-messy": "memorybank",  # scripts/messy_sets.py
         "locomo-people": "locomo-dev"}  # scripts/people_sets.py
DEFAULT_PATHS = {"locomo-dev": SHARED / "locomo-dev.json", "memorybank": SHARED / "memorybank-en.json",
                 "synthetic": REPO / "eval" / "recall_set.json"}
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
SYNTHETIC_TYPES = ("single", "preference", "multi", "temporal", "changed")


@dataclass(frozen=True)
class Question:
    text: str
    category: str
    evidence: frozenset[str]  # source ids of the evidence turns


@dataclass
class MemorySet:
    """One person's history: Lyra JSON Lines sessions, and the questions asked of it."""

    name: str
    user: str  # who the user is in these conversations
    sessions: list[dict[str, Any]]
    questions: list[Question] = field(default_factory=list)

    def jsonl(self) -> str:
        return "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in self.sessions)

    @property
    def turns(self) -> int:
        return sum(len(s["messages"]) for s in self.sessions)


def categories(dataset: str) -> tuple[str, ...]:
    dataset = MESSY.get(dataset, dataset)
    if dataset == "locomo-dev":
        return tuple(LOCOMO_CATEGORIES.values())
    if dataset == "synthetic":
        return SYNTHETIC_TYPES
    return ("dated", "undated")


def load(dataset: str, path: Path | None = None) -> list[MemorySet]:
    if dataset in MESSY:
        from messy_sets import locomo_messy, memorybank_messy
        clean = load(MESSY[dataset], path)
        if dataset == "locomo-people":
            from people_sets import locomo_people
            return locomo_people(clean)
        return locomo_messy(clean) if dataset == "locomo-messy" else memorybank_messy(clean)
    path = path or DEFAULT_PATHS[dataset]
    if dataset == "locomo-dev":
        return list(locomo(path))
    if dataset == "memorybank":
        return list(memorybank(path, path.with_name("memorybank-en-questions.jsonl"),
                               REPO / "eval" / "memorybank_evidence.json"))
    if dataset == "synthetic":
        return list(synthetic(path))
    raise ValueError(f"unknown dataset {dataset!r}; one of {', '.join(DATASETS)}")


def locomo_time(text: str) -> datetime:
    """``'1:56 pm on 8 May, 2023'`` as UTC."""
    return datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def locomo(path: Path) -> Iterator[MemorySet]:
    for item in json.loads(path.read_text(encoding="utf-8")):
        conv, sample = item["conversation"], item["sample_id"]
        sessions, known = [], set()
        numbers = sorted(int(m.group(1)) for key in conv if (m := re.fullmatch(r"session_(\d+)", key)))
        for n in numbers:
            start = locomo_time(conv[f"session_{n}_date_time"])
            messages = []
            for i, turn in enumerate(conv[f"session_{n}"]):
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                role = "user" if turn["speaker"] == conv["speaker_a"] else "assistant"
                at = start + timedelta(seconds=min(i, 59))
                messages.append({"role": role, "content": text, "created_at": at.isoformat(),
                                 "source_id": turn["dia_id"]})
                known.add(turn["dia_id"])
            sessions.append({"id": f"{sample}-s{n}", "name": f"{sample} session {n}",
                             "created_at": start.isoformat(), "messages": messages})
        questions = []
        for qa in item["qa"]:
            if qa.get("category") not in LOCOMO_CATEGORIES:
                continue
            evidence = frozenset(e for entry in qa.get("evidence", []) for e in re.split(r"[;\s]+", entry)
                                 if e in known)
            if evidence:
                questions.append(Question(qa["question"], LOCOMO_CATEGORIES[qa["category"]], evidence))
        yield MemorySet(sample, conv["speaker_a"], sessions, questions)


DATED = re.compile(r"\b(january|february|march|april|may|june|july|august|september|october|november|december)"
                   r"\s+\d{1,2}(st|nd|rd|th)?\b|\b\d{4}-\d{2}-\d{2}\b", re.IGNORECASE)


def memorybank(history: Path, questions: Path, labels: Path) -> Iterator[MemorySet]:
    people = {name.strip(): person for name, person in json.loads(history.read_text(encoding="utf-8")).items()}
    labelled: dict[str, list[dict[str, Any]]] = {}
    for entry in json.loads(labels.read_text(encoding="utf-8"))["questions"]:
        labelled.setdefault(entry["name"], []).append(entry)
    for name, person in people.items():
        sessions = []
        for day, pairs in sorted(person["history"].items()):
            if not pairs:
                continue
            start = datetime.fromisoformat(day).replace(hour=20, tzinfo=timezone.utc)
            messages = []
            for i, pair in enumerate(pairs):
                at = (start + timedelta(minutes=2 * i)).isoformat()
                messages.append({"role": "user", "content": pair["query"], "created_at": at,
                                 "source_id": f"{day}/{i}/user"})
                messages.append({"role": "assistant", "content": pair["response"], "created_at": at,
                                 "source_id": f"{day}/{i}/assistant"})
            sessions.append({"id": f"memorybank-{name}-{day}", "name": f"{name} {day}", "created_at": start.isoformat(),
                             "messages": messages})
        asked = []
        for entry in labelled.get(name, []):
            evidence = frozenset(f"{e['date']}/{e['pair']}/{e['role']}" for e in entry["evidence"])
            if evidence:
                category = "dated" if DATED.search(entry["question"]) else "undated"
                asked.append(Question(entry["question"], category, evidence))
        yield MemorySet(f"memorybank-{name}", name, sessions, asked)


def synthetic(path: Path, today: datetime | None = None) -> Iterator[MemorySet]:
    today = today or datetime.now(timezone.utc).replace(hour=9, minute=0, second=0, microsecond=0)
    data = json.loads(path.read_text(encoding="utf-8"))
    for person in data["people"]:
        sessions = []
        for si, s in enumerate(person["sessions"]):
            day = today + timedelta(days=s["day"] - 1)
            messages = [{"role": role, "content": text, "created_at": (day + timedelta(minutes=2 * ti)).isoformat(),
                         "source_id": f"{si}:{ti}"} for ti, (role, text) in enumerate(s["turns"])]
            sessions.append({"id": f"synthetic-{person['person']}-{si}", "name": s["name"],
                             "created_at": day.isoformat(), "messages": messages})
        questions = [Question(q["question"], q["type"], frozenset(f"{s}:{t}" for s, t in q["evidence"]))
                     for q in person["questions"]]
        questions.append(_month_question(person, today))
        yield MemorySet(f"synthetic-{person['person']}", person["person"], sessions, questions)


def _month_question(person: dict[str, Any], today: datetime) -> Question:
    """'What was I up to in <Month YYYY>?': the holiday turns dated in that month are the evidence."""
    holiday = next(q for q in person["questions"] if "holiday" in q["question"])
    first = holiday["evidence"][0][0]
    day = today + timedelta(days=person["sessions"][first]["day"] - 1)
    evidence = [e for e in holiday["evidence"]
                if (today + timedelta(days=person["sessions"][e[0]]["day"] - 1)).month == day.month]
    return Question(f"What was I up to in {day:%B %Y}?", "temporal", frozenset(f"{s}:{t}" for s, t in evidence))
