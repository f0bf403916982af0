#!/usr/bin/env python3
"""Case files for ``scripts/eval_facts.py`` from LoCoMo's dev half: facts as an ideal model would propose them.

A true proposal is one of our labels (``eval/facts_labels.json``: a LoCoMo
gold observation's ``sample_id`` and evidence ``dia_id``, with the key and a
short value we decided for it, ``eval/facts_labels.md``); its quote is taken
here from the data: the first sentence of the evidence turn holding every
content word of the value. One case per conversation and speaker: the whole
conversation, that speaker's turns as ``user`` (the person), the other's as
``assistant``, each turn's text as the project imports LoCoMo, without the
``Name: `` label (``recall_sets.locomo``).

False proposals, made from each true one (``kind``):

- ``other_speaker``: the same claim in the case where the other speaker is the
  person: the quote is in the assistant's turn (left out where that speaker
  said the same words too);
- ``other_conversation``: the same key and value, quoted from a sentence of
  another conversation (in no turn here) that holds the value's words, or
  where none does, the quote of a true proposal of another conversation (of
  the same key if there is one);
- ``question``: the same key and value, quoted from a question of the
  person's own in this conversation that holds the value's words;
- ``wrong_key``: the same value and quote under a key it is not (``WRONG_KEY``).

Writes the case file given and nothing else; the LoCoMo data stays in
``../shared/data`` (its licence is not the project's).

    python scripts/facts_cases.py /tmp/locomo_facts.json
    python scripts/eval_facts.py --cases /tmp/locomo_facts.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lyra_local.mind.facts.statement import WORD, content_words
from lyra_local.mind.grounding.checks import sentences, split_speaker

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gold import Observation, observations  # noqa: E402
from recall_sets import REPO, SHARED, locomo  # noqa: E402

LABELS = REPO / "eval" / "facts_labels.json"
CAPTION = " [shares a photo: "
# a key each key's value is plainly not (the job's value proposed as the pet's): distant in meaning, never a
# neighbour the gate may rightly accept (hobbies/likes, home city/origin, children/family)
WRONG_KEY = {
    "name": "health", "age": "pet", "birthday": "job", "home city": "pet", "origin": "hobbies", "job": "pet",
    "education": "pet", "partner": "education", "children": "job", "family": "education", "pet": "job",
    "friends": "health", "hobbies": "partner", "likes": "health", "dislikes": "children", "health": "likes",
    "plans": "pet", "routine": "partner", "identity": "job", "beliefs": "pet",
}


@dataclass(frozen=True)
class Said:
    """One LoCoMo turn: who said it, its id, and its content as imported without the ``Name: `` label."""

    speaker: str
    dia_id: str
    content: str

    @property
    def text(self) -> str:
        """The speaker's own words: without the photo's caption."""
        return self.content.partition(CAPTION)[0]


def conversations(path: Path) -> dict[str, tuple[tuple[str, str], list[Said]]]:
    """sample_id -> ((speaker_a, speaker_b), every turn in order)."""
    out = {}
    for memory in locomo(path):
        turns = []
        for session in memory.sessions:
            for message in session["messages"]:
                speaker, content = split_speaker(message["content"])
                turns.append(Said(speaker or "", message["source_id"], content))
        other = next(t.speaker for t in turns if t.speaker != memory.user)
        out[memory.name] = ((memory.user, other), turns)
    return out


def holds(sentence: str, value: str) -> bool:
    """Every content word of the value is a word of the sentence (as written, case aside)."""
    wanted = content_words(value)
    return bool(wanted) and set(wanted) <= {w.casefold().replace("’", "'") for w in WORD.findall(sentence)}


def quote_for(turn: Said, value: str) -> str | None:
    return next((s for s in sentences(turn.text) if holds(s, value)), None)


def true_proposals(labels: list[dict[str, str]], convs: dict[str, tuple[tuple[str, str], list[Said]]],
                   gold: dict[str, list[Observation]]) -> list[dict[str, Any]]:
    """Each label as a proposal with its quote and speaker; a label the data does not bear out stops the run."""
    out = []
    for label in labels:
        where = f"{label['sample_id']} {label['dia_id']} ({label['key']}: {label['value']!r})"
        turn = next((t for t in convs[label["sample_id"]][1] if t.dia_id == label["dia_id"]), None)
        if turn is None:
            raise SystemExit(f"{where}: no such turn")
        if not any(o.speaker == turn.speaker and turn.dia_id in o.evidence for o in gold[label["sample_id"]]):
            raise SystemExit(f"{where}: no gold observation of {turn.speaker} stands on this turn")
        quote = quote_for(turn, label["value"])
        if quote is None:
            raise SystemExit(f"{where}: no sentence of the turn holds the value's words: {turn.text!r}")
        out.append({"key": label["key"], "value": label["value"], "quote": quote, "true": True, "kind": "true",
                    "sample_id": label["sample_id"], "speaker": turn.speaker, "source": where})
    return out


def inside(quote: str, turns: Iterable[Said]) -> bool:
    folded = quote.casefold()
    return any(folded in t.content.casefold() for t in turns)


def is_question(sentence: str) -> bool:
    """A sentence that only asks: it ends with "?" and holds no statement before a break ("I finished it - want
    to see?" says something before it asks)."""
    return sentence.rstrip().endswith("?") and not re.search(r" [-–—] |;", sentence)


def falses(fact: dict[str, Any], facts: list[dict[str, Any]],
           convs: dict[str, tuple[tuple[str, str], list[Said]]]) -> list[dict[str, Any]]:
    """The false proposals made from one true one (``other_speaker`` aside: it is the true one in the other case)."""
    made = []
    turns = convs[fact["sample_id"]][1]
    elsewhere = [s for sample, (_, others) in sorted(convs.items()) if sample != fact["sample_id"]
                 for t in others for s in sentences(t.text) if holds(s, fact["value"]) and not is_question(s)]
    # where no other conversation says the value's words, a true quote of the same key (else any) from another
    elsewhere += [f["quote"] for f in facts if f["sample_id"] != fact["sample_id"] and f["key"] == fact["key"]]
    elsewhere += [f["quote"] for f in facts if f["sample_id"] != fact["sample_id"]]
    quote = next(s for s in elsewhere if not inside(s, turns))
    made.append({**fact, "quote": quote, "kind": "other_conversation"})
    asked = next((s for t in turns if t.speaker == fact["speaker"] for s in sentences(t.text)
                  if is_question(s) and holds(s, fact["value"]) and s != fact["quote"]), None)
    if asked is not None:
        made.append({**fact, "quote": asked, "kind": "question"})
    made.append({**fact, "key": WRONG_KEY[fact["key"]], "kind": "wrong_key"})
    return [{**f, "true": False} for f in made]


def build(path: Path, labels: list[dict[str, str]]) -> list[dict[str, Any]]:
    convs = conversations(path)
    facts = true_proposals(labels, convs, observations(path))
    cases = []
    for sample, (speakers, turns) in sorted(convs.items()):
        for person in speakers:
            proposals = []
            for fact in facts:
                if fact["sample_id"] != sample:
                    continue
                if fact["speaker"] == person:
                    proposals += [fact, *falses(fact, facts, convs)]
                elif not inside(fact["quote"], [t for t in turns if t.speaker == person]):  # else they said it too
                    proposals.append({**fact, "true": False, "kind": "other_speaker"})
            cases.append({"name": f"{sample} {person}",
                          "turns": [{"role": "user" if t.speaker == person else "assistant", "content": t.content}
                                    for t in turns],
                          "proposals": [{k: p[k] for k in ("key", "value", "quote", "true", "kind", "source")}
                                        for p in proposals]})
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="the case file to write (outside the repository: it quotes LoCoMo)")
    parser.add_argument("--data", type=Path, default=SHARED / "locomo-dev.json")
    parser.add_argument("--labels", type=Path, default=LABELS)
    args = parser.parse_args()
    cases = build(args.data, json.loads(args.labels.read_text(encoding="utf-8")))
    args.out.write_text(json.dumps(cases, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    kinds = Counter(p["kind"] for c in cases for p in c["proposals"])
    speakers = Counter(c["name"] for c in cases for p in c["proposals"] if p["true"])
    print(f"wrote {len(cases)} cases, {sum(kinds.values())} proposals to {args.out}: "
          + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
    print("true proposals per case: " + ", ".join(f"{name} {n}" for name, n in sorted(speakers.items())))


if __name__ == "__main__":
    main()
