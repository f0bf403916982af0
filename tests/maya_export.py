"""A person's ChatGPT history, written for this project: four conversations in which Maya says who she is.

A new user as she would come: a nurse in Leeds with a rescue greyhound, a sister in Edinburgh, a pottery class
and a move planned, told to ChatGPT in her own messy spelling between long, list-like answers. ``PLANTED``
is what a careful reader learns about her; ``TRUE`` is everything true that may be learnt (a fact outside
it is false); ``HER_WORDS`` is every message of hers, for the checks that Lyra's own voice never copies them.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

from .chatgpt_export import conversation, write_export

INTERVIEW = [
    ("user", "Hi! I'm Maya. I have an interview on 2 May for a ward manager job, can you help me prepare?"),
    ("assistant", "Of course, Maya! Congratulations on getting the interview. A ward manager interview usually "
                  "covers leadership, patient safety and how you handle staffing pressure. Prepare two or three "
                  "stories using the STAR method: the situation, the task, the action you took and the result. "
                  "Expect questions about conflict in the team, audits, and how you would improve morale. "
                  "It also helps to read the trust's latest inspection report and to have a question ready "
                  "for the panel about their priorities for the ward."),
    ("user", "i work night shifts as a nurse at st james's hospital so im always tired lol"),
    ("assistant", "Night shifts are hard on sleep, so plan your preparation around your rest. Try short "
                  "sessions of thirty minutes after you have slept rather than long evenings. Keep your "
                  "STAR stories on cards so you can review them on a break. On the day before the interview, "
                  "if you can, swap or avoid a night shift so you arrive rested and clear-headed."),
]
DOG = [
    ("user", "we adopted a rescue greyhound called Biscuit last month!! he's scared of the hoover"),
    ("assistant", "How lovely, rescue greyhounds often make gentle companions. Fear of the vacuum cleaner is very "
                  "common in ex-racing dogs. Start by leaving the vacuum switched off in the room and rewarding "
                  "him for calm behaviour near it. Then run it in another room for a few seconds at a time, "
                  "with treats, and slowly build up. Give him a quiet place to retreat to, and never force him "
                  "towards it. Most greyhounds settle within a few weeks with patient, gradual exposure."),
    ("user", "thanks! any tips for walking him in the rain? he refuses to go out"),
    ("assistant", "Greyhounds have thin coats and little body fat, so many dislike cold and wet weather. A "
                  "waterproof, fleece-lined coat helps a lot. Keep rainy walks short, towel him dry afterwards, "
                  "and reward him at the door. Some owners time walks for breaks in the rain using a weather "
                  "app, and play indoor games on the worst days to burn off energy."),
]
MOVING = [
    ("user", "I'm thinking of moving from Leeds to Edinburgh in September"),
    ("assistant", "That is a big decision, and September gives you time to plan. Think about work first: "
                  "whether your job can transfer or whether you will apply for posts in Edinburgh. Compare "
                  "rents in the areas you like, council tax bands and commuting times. Visit at least once "
                  "to view flats, and check the notice period on your current tenancy. Make a moving budget "
                  "that includes removal costs, deposits and a cushion for the first month."),
    ("user", "my sister Jess lives there already, she's a teacher"),
    ("assistant", "Having family nearby makes a move much easier. Your sister can tell you which areas are "
                  "pleasant to live in, and you may be able to stay with her while you look for a flat. She "
                  "might also know local schools, doctors and transport routes from experience."),
    ("user", "Jess says the flats near Leith are cheaper"),
    ("assistant", "Leith is popular for its waterfront and food scene, and rents there can be lower than in "
                  "the New Town or Stockbridge. Look at transport links to the hospitals you might work at, "
                  "and visit in the evening as well as the day to get a feel for the streets."),
]
WEEKEND = [
    ("user", "i started a saturday pottery class w/ jess, it's so relaxing"),
    ("assistant", "Pottery is a wonderful way to unwind, and doing it with your sister makes it even better. "
                  "Working with clay is very absorbing, which helps quiet a busy mind. Beginners often start "
                  "with pinch pots and coil pots before moving to the wheel, so be patient with yourself."),
    ("user", "I go swimming every morning before my shift"),
    ("assistant", "Swimming is excellent exercise for shift workers: it is low impact, builds stamina and can "
                  "help you sleep. Have a small snack with protein afterwards, and drink water, because a "
                  "shift straight after exercise can leave you more tired than you expect."),
]
CONVERSATIONS = [("maya-interview", "Interview prep", datetime(2024, 3, 10, 19, 5), INTERVIEW),
                 ("maya-dog", "Greyhound and the hoover", datetime(2024, 3, 12, 8, 40), DOG),
                 ("maya-move", "Moving to Edinburgh", datetime(2024, 4, 2, 21, 15), MOVING),
                 ("maya-weekend", "Pottery and swimming", datetime(2024, 4, 20, 10, 30), WEEKEND)]

HER_WORDS = [text for _, _, _, turns in CONVERSATIONS for role, text in turns if role == "user"]
CHATGPT_WORDS = [text for _, _, _, turns in CONVERSATIONS for role, text in turns if role == "assistant"]

# The seven facts a careful reader learns: each one's name, with what a fact must match to hold it.
PLANTED = {
    "name": re.compile(r"^maya$"),
    "pet": re.compile(r"biscuit"),
    "job": re.compile(r"nurse"),
    "home city": re.compile(r"^leeds$"),
    "plan": re.compile(r"edinburgh"),
    "sister": re.compile(r"jess"),
    "hobby": re.compile(r"pottery|swimming"),
}
# Every fact that is true of Maya: (what its key must say, what its value must say), folded. A stored fact
# that matches none is false ("home city: Edinburgh" is: she is moving there, she does not live there yet).
TRUE = [(re.compile(k), re.compile(v)) for k, v in (
    (r"name", r"^maya$"),
    (r"pet|dog", r"^(?:(?:a |an )?(?:rescue )?(?:greyhound|dog)(?: named| called)? )?biscuit$"),
    (r"job|work|occupation", r"^(?:a )?(?:night[- ]shift )?nurse(?: .*st james'?s(?: hospital)?)?$"),
    (r"job|work|occupation", r"^(?:at )?st james'?s(?: hospital)?$"),
    (r"home|city|live", r"^leeds$"),
    (r"plan|move|moving", r"edinburgh"),
    (r"sister|sibling|family", r"^(?:(?:her |my )?sister )?jess$"),
    (r"hobb|routine|sport|exercise|class|activit", r"pottery|swimming"),
    (r"event|plan|interview", r"interview.*(?:2 may|ward manager)|ward manager"),
)]


def is_true(key: str, value: str) -> bool:
    return any(k.search(key.casefold()) and v.search(value.casefold()) for k, v in TRUE)


def write(path: Path) -> Path:
    """The four conversations as ChatGPT exports them (a zip holding conversations.json)."""
    return write_export(path, [conversation(cid, title, turns, start=at.replace(tzinfo=timezone.utc).timestamp())
                               for cid, title, at, turns in CONVERSATIONS])


def copied_runs(text: str, sources: list[str], run: int = 6) -> list[str]:
    """The runs of ``run`` or more words of ``text`` that one of ``sources`` says word for word."""
    def tokens(s: str) -> list[str]:
        return re.findall(r"[a-z0-9']+", s.casefold().replace("’", "'"))

    said = {" ".join(ws[i:i + run]) for s in sources for ws in [tokens(s)] for i in range(len(ws) - run + 1)}
    mine = tokens(text)
    return [" ".join(mine[i:i + run]) for i in range(len(mine) - run + 1) if " ".join(mine[i:i + run]) in said]
