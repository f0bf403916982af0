"""Robustness sets: LoCoMo and MemoryBank rewritten the way real people type, every evidence label kept.

A regression test of robustness, **not evidence of quality**: we wrote the
perturbations, so a gain here only says Lyra does not break on them. What real
people's messages look like (short bursts for one thought, lower case, typos,
emoji, nicknames, no ``Name:`` label) is taken from what recall meets in the
wild; the rules below are deterministic (seeded by the turn's id), so two runs
measure the same set.

- **Bursts**: a turn of several sentences becomes several messages a few
  seconds apart (``D3:12#1``, ``D3:12#2``, ...); a question's evidence turn
  counts as found when any of its messages is (``origin``).
- **No label**: the content is what the person typed, without ``Name: ``;
  only the role says who spoke.
- **Style per speaker**: one speaker of each conversation types in lower case
  without full stops; everyone makes common typos and shorthand ("u", "rly",
  swapped letters) and adds emoji now and then.
- **Nicknames**: the other side calls a LoCoMo speaker by a nickname
  ("Mel" for Melanie), and half of the questions use it.
- MemoryBank: only the person's messages are perturbed; the companion's
  replies are a model's and stay as they were.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recall_sets import MemorySet

NICKNAMES = {"Caroline": "Caro", "Melanie": "Mel", "John": "Johnny", "Maria": "Mari", "Tim": "Timmy",
             "James": "Jim", "Evan": "Ev", "Sam": "Sammy", "Joanna": "Jo", "Nate": "Nat", "Gina": "Gi",
             "Jon": "Jonny", "Audrey": "Aud", "Andrew": "Andy", "Deborah": "Deb", "Jolene": "Jo"}
SHORTHAND = {"you": "u", "your": "ur", "are": "r", "really": "rly", "because": "bc", "tonight": "tonite",
             "okay": "ok", "please": "pls", "thanks": "thx", "though": "tho", "probably": "prob",
             "going to": "gonna", "want to": "wanna", "i don't know": "idk", "to be honest": "tbh"}
EMOJI = ("😂", "😊", "❤️", "🙏", "😍", "👍", "🔥", "🥰", "😅", "🎉")
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")
WORDS_TO_SPLIT = 12  # a turn this long or longer, of several sentences, is sent as a burst


def chance(key: str) -> float:
    """A number in [0, 1) fixed by ``key``: the same set on every run, without a global random state."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64


def nickname(name: str) -> str:
    return NICKNAMES.get(name, name[:3] if len(name) > 4 else name + "y")


def bursts(text: str) -> list[str]:
    """A turn as the messages a person would send: its sentences, tiny ones kept with the next."""
    if len(text.split()) < WORDS_TO_SPLIT:
        return [text]
    pieces: list[str] = []
    carry = ""
    for sentence in SENTENCE.split(text):
        sentence = f"{carry} {sentence}".strip() if carry else sentence
        if len(sentence.split()) < 3:
            carry = sentence
            continue
        pieces.append(sentence)
        carry = ""
    if carry:
        pieces = [*pieces[:-1], f"{pieces[-1]} {carry}"] if pieces else [carry]
    return pieces


def typo(word: str, key: str) -> str:
    """One common slip: two letters swapped, one dropped or one doubled."""
    if len(word) < 4 or not word.isalpha():
        return word
    i = 1 + int(chance(key + "i") * (len(word) - 2))
    kind = chance(key + "k")
    if kind < 0.4:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind < 0.7:
        return word[:i] + word[i + 1:]
    return word[:i] + word[i] + word[i:]


def retype(text: str, key: str, *, casual: bool, typo_rate: float = 0.05, emoji_rate: float = 0.2) -> str:
    """``text`` as typed in a hurry: shorthand, typos, maybe an emoji; ``casual``: lower case, no full stops."""
    out = text
    for phrase, short in SHORTHAND.items():
        if chance(f"{key}/{phrase}") < 0.5:
            out = re.sub(rf"\b{re.escape(phrase)}\b", short, out, flags=re.IGNORECASE)
    words = out.split(" ")
    out = " ".join(typo(w, f"{key}/{n}") if chance(f"{key}/t{n}") < typo_rate else w for n, w in enumerate(words))
    if casual:
        out = re.sub(r"[.,;](?=\s|$)", "", out.lower()).replace("’", "'").replace("'", "")
    if chance(key + "/emoji") < emoji_rate:
        out = f"{out} {EMOJI[int(chance(key + '/which') * len(EMOJI))]}"
    return out


def call_by_nickname(text: str, names: dict[str, str]) -> str:
    """The other speaker's name as the nickname they use for them."""
    for name, nick in names.items():
        text = re.sub(rf"\b{re.escape(name)}\b", nick, text)
    return text


def messages(turn: dict[str, Any], text: str, start: datetime, key: str, *, casual: bool,
             typo_rate: float = 0.05) -> list[dict[str, Any]]:
    """One turn as its burst of messages, a few seconds apart, each with ``<source_id>#<n>``."""
    out = []
    for n, piece in enumerate(bursts(text), 1):
        at = start + timedelta(seconds=4 * (n - 1))
        out.append({"role": turn["role"], "content": retype(piece, f"{key}#{n}", casual=casual, typo_rate=typo_rate),
                    "created_at": at.isoformat(), "source_id": f"{turn['source_id']}#{n}"})
    return out


def speaker_names(memory_set: MemorySet) -> tuple[str, str]:
    """The user's and the other speaker's names, from the ``Name: `` labels of the clean set."""
    by_role = {m["role"]: m["content"].split(": ", 1)[0] for s in memory_set.sessions for m in s["messages"]}
    return by_role["user"], by_role["assistant"]


def locomo_messy(sets: Iterable[MemorySet]) -> list[MemorySet]:
    """LoCoMo's conversations as real people would type them."""
    out = []
    for memory_set in sets:
        a, b = speaker_names(memory_set)
        casual = {"user": chance(memory_set.name) < 0.5, "assistant": False}
        casual["assistant"] = not casual["user"]
        other = {"user": {b: nickname(b)}, "assistant": {a: nickname(a)}}
        sessions = []
        for session in memory_set.sessions:
            start = datetime.fromisoformat(session["created_at"])
            new: list[dict[str, Any]] = []
            for i, turn in enumerate(session["messages"]):
                text = turn["content"].split(": ", 1)[1]
                text = call_by_nickname(text, other[turn["role"]])
                at = start + timedelta(minutes=i // 2, seconds=30 * (i % 2))
                new.extend(messages(turn, text, at, turn["source_id"], casual=casual[turn["role"]]))
            sessions.append({**session, "messages": new})
        questions = [replace(q, text=call_by_nickname(q.text, {a: nickname(a), b: nickname(b)}))
                     if chance(q.text) < 0.5 else q for q in memory_set.questions]
        out.append(replace(memory_set, sessions=sessions, questions=questions))
    return out


def memorybank_messy(sets: Iterable[MemorySet]) -> list[MemorySet]:
    """MemoryBank's people typing like people; the companion's replies unchanged."""
    out = []
    for memory_set in sets:
        sessions = []
        for session in memory_set.sessions:
            new: list[dict[str, Any]] = []
            for turn in session["messages"]:
                at = datetime.fromisoformat(turn["created_at"])
                if turn["role"] == "assistant":
                    new.append({**turn, "created_at": (at + timedelta(seconds=50)).isoformat(),
                                "source_id": f"{turn['source_id']}#1"})
                    continue
                new.extend(messages(turn, turn["content"], at, turn["source_id"],
                                    casual=chance(memory_set.name) < 0.7))
            sessions.append({**session, "messages": new})
        out.append(replace(memory_set, sessions=sessions))
    return out


def origin(source_id: str) -> str:
    """The turn a message of a burst came from (``D3:12#2`` -> ``D3:12``)."""
    return source_id.split("#", 1)[0]
