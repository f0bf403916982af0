"""LoCoMo's dev half as people write to each other: a dev set for knowing who is who.

A regression set built by rule from ``locomo-dev`` (``recall_sets.locomo``),
every evidence label kept, so its figures are comparable run to run:

- **No label**: a turn's content is what the speaker typed, without ``Name: ``.
- **Each speaker a person of the memory**: ``speaker_a`` is the person (the
  ``user`` role); ``speaker_b`` is another participant of an imported chat,
  not the companion: the ``assistant`` role with ``author`` set to their name,
  as an import labels who wrote each message.
- **Bursts**: a turn of several sentences is sent as several messages a few
  seconds apart (``messy_sets.bursts``); a question's evidence turn is found
  when any of its messages is (``messy_sets.origin``).
- **Questions ask by names the turns never use.** Each question that names a
  speaker keeps the name (half of them, chosen by ``messy_sets.chance``) or
  calls them by a nickname (``nickname``), and one in three is typed in lower
  case. The nickname is the first of these forms that no turn of that
  conversation uses as a word: the name's first syllable (names of five
  letters or more: letters up to the first consonant after the first vowel,
  "Caroline" -> "Car"), then its diminutive (that syllable, or a short name
  whole, with "ie", the final consonant doubled after a single vowel:
  "Melanie" -> "Mellie", "Tim" -> "Timmie", "John" -> "Johnie").

``eval/locomo_people.json`` holds what the rule chose (each conversation's
nicknames and each question's form), written by
``python scripts/people_sets.py --write``; the question texts stay in the
shared data (its licence is not the project's).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from messy_sets import bursts, chance, speaker_names
from recall_sets import REPO, MemorySet

RECORD = REPO / "eval" / "locomo_people.json"
VOWELS = "aeiouy"
WORD = re.compile(r"[a-z]+")


def syllable(name: str) -> str:
    """The name's first syllable: up to and including the first consonant after its first vowel."""
    lower = name.lower()
    i = next((n for n, c in enumerate(lower) if c in VOWELS), len(lower))
    while i < len(lower) and lower[i] in VOWELS:
        i += 1
    return name[:i + 1]


def diminutive(name: str) -> str:
    base = name if len(name) <= 4 else syllable(name)
    if len(base) <= 3 and base[-1].lower() not in VOWELS and base[-2].lower() in VOWELS:
        base += base[-1].lower()
    return base + "ie"


def nickname(name: str, used: set[str]) -> str:
    """The first of the name's shortenings that no turn uses as a word (``used``: the turns' words, lower case)."""
    forms = ([syllable(name)] if len(name) >= 5 else []) + [diminutive(name)]
    return next((f for f in forms if f.lower() not in used), forms[-1])


def asked_as(question: str, names: dict[str, str], key: str) -> tuple[str, str, bool]:
    """The question as the rule asks it: (text, "name" or "nickname", typed in lower case)."""
    form = "nickname" if chance(key + "/form") < 0.5 else "name"
    lower = chance(key + "/lower") < 1 / 3
    text = question
    if form == "nickname":
        for name, nick in names.items():
            text = re.sub(rf"\b{re.escape(name)}\b", nick, text)
    return (text.lower() if lower else text), form, lower


def locomo_people(sets: Iterable[MemorySet]) -> list[MemorySet]:
    """Each LoCoMo conversation as its two people wrote it, with the questions asked by names and nicknames."""
    out = []
    for memory_set in sets:
        a, b = speaker_names(memory_set)
        sessions, used = [], set()
        for session in memory_set.sessions:
            start = datetime.fromisoformat(session["created_at"])
            new: list[dict[str, Any]] = []
            for i, turn in enumerate(session["messages"]):
                text = turn["content"].split(": ", 1)[1]
                used.update(WORD.findall(text.lower()))
                at = start + timedelta(minutes=i // 2, seconds=30 * (i % 2))
                for n, piece in enumerate(bursts(text), 1):
                    message = {"role": turn["role"], "content": piece,
                               "created_at": (at + timedelta(seconds=4 * (n - 1))).isoformat(),
                               "source_id": f"{turn['source_id']}#{n}"}
                    if turn["role"] == "assistant":
                        message["author"] = b
                    new.append(message)
            sessions.append({**session, "messages": new})
        names = {a: nickname(a, used), b: nickname(b, used)}
        questions = [replace(q, text=asked_as(q.text, names, f"{memory_set.name}/{n}")[0])
                     for n, q in enumerate(memory_set.questions)]
        out.append(replace(memory_set, name=f"{memory_set.name}-people", sessions=sessions, questions=questions))
    return out


def record(clean: list[MemorySet], people: list[MemorySet]) -> dict[str, Any]:
    """What the rule chose, for review: each conversation's nicknames and each question's form."""
    out: dict[str, Any] = {"made_by": "python scripts/people_sets.py --write", "rule": "scripts/people_sets.py",
                           "conversations": {}}
    for before, after in zip(clean, people, strict=True):
        a, b = speaker_names(before)
        words = {w for s in after.sessions for m in s["messages"] for w in WORD.findall(m["content"].lower())}
        names = {a: nickname(a, words), b: nickname(b, words)}
        forms = [asked_as(q.text, names, f"{before.name}/{n}")[1:] for n, q in enumerate(before.questions)]
        named = [(f, low) for q, (f, low) in zip(before.questions, forms, strict=True) if a in q.text or b in q.text]
        out["conversations"][before.name] = {
            "person": a, "other": b, "nicknames": names, "questions": len(forms),
            "naming a speaker": len(named), "asked by nickname": sum(f == "nickname" for f, _ in named),
            "lower case": sum(low for _, low in forms),
            "forms": [f"{f}{' lower' if low else ''}" for f, low in forms]}
    return out


def main() -> None:
    from recall_sets import load
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help=f"write {RECORD.relative_to(REPO)}")
    parser.add_argument("--path", type=Path, help="locomo-dev.json (default: recall_sets.py)")
    args = parser.parse_args()
    clean = load("locomo-dev", args.path)
    made = record(clean, locomo_people(clean))
    text = json.dumps(made, indent=1, ensure_ascii=False) + "\n"
    if args.write:
        RECORD.write_text(text, encoding="utf-8")
    for sample, c in made["conversations"].items():
        print(sample, c["nicknames"], {k: c[k] for k in ("questions", "naming a speaker", "asked by nickname")})


if __name__ == "__main__":
    main()
