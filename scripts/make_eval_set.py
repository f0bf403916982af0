#!/usr/bin/env python3
"""Write the recall evaluation set, deterministically: ``eval/recall_set.json``.

Several synthetic people, each with a year of conversations (a session every
ten days or so), with facts planted in known turns and questions about them
phrased differently from the evidence: single facts, preferences, facts spread
over two sessions, "when did I ..." and "what was I doing in <month>", and
facts that changed (only the newer turn counts).

What makes it hard, as real histories are:
- the chit-chat is composed from parts (few exact repeats) and talks about the
  same things the questions ask about: every planted topic also has near-miss
  turns in other sessions ("I should really find a dentist") that share the
  question's words but not its answer;
- people write several things in one message: most user turns are two or
  three sentences on different subjects, planted facts included, which blurs
  a turn's vector the way real messages do;
- about half the facts come as conversations do: a turn announces something,
  the companion asks, and the answer is in the *next* turn, which shares few
  words with the question ("Pixel, the kids chose it").

Dates are offsets in days from the last session, so the evaluation can anchor
them to "now".

    python scripts/make_eval_set.py          # rewrites eval/recall_set.json
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "eval" / "recall_set.json"
SESSIONS, TURNS = 36, 16
OPENERS = ["", "So, ", "Anyway, ", "Oh, and ", "Honestly, ", "Funny thing: ", "Not much news, but ", "Hm, "]
WHEN = ["this morning", "yesterday", "after work", "on Saturday", "last night", "at lunch", "on the way home",
        "before breakfast", "on Sunday afternoon", "earlier today"]
DID = ["I went for a walk by the {place}", "I cleaned the whole {room}", "I fixed the wobbly {thing}",
       "I watched a documentary about {topic}", "I had coffee with {friend}", "I tried a new bakery near the {place}",
       "I repotted the plants on the {room} windowsill", "I sorted out old photos", "I called my mum",
       "I went to the market for {food}", "I finally answered my emails", "I got caught in the rain near the {place}",
       "I helped {friend} carry a sofa", "I read about {topic} for an hour", "I did a yoga video in the {room}",
       "I baked bread, it came out {adj}", "I queued at the post office", "I played cards with {friend}",
       "I went swimming at the public pool", "I took the long way round through the {place}"]
FEEL = ["it was {adj}", "I feel {mood} now", "not bad at all", "it took forever", "which was nice for a change",
        "and I'm {mood}", "so that's done", "more {adj} than I expected"]
STANDALONE = ["The neighbours were loud again, some party until two.", "My phone battery dies by noon these days.",
              "I keep forgetting to drink enough water.", "The heating is making that clicking noise again.",
              "I'm thinking of redecorating the {room}, maybe a darker green.", "Work was {adj}, lots of meetings.",
              "I want to learn to draw properly this year.", "The internet was down for half the day.",
              "I slept badly, weird dreams about {topic}.", "Bought a plant for the {room}, no idea what it is.",
              "Traffic was {adj} on the ring road.", "My back is stiff from sitting all day.",
              "{friend} sent me a funny video about {topic}.", "I should call the landlord about the {thing}.",
              "The bus was late twice this week.", "I made soup with the leftover {food}."]
REPLIES = ["That sounds {adj}. How are you feeling about it?", "I see. Did anything else happen today?",
           "Nice. Tell me more if you like.", "That makes sense. Take care of yourself.",
           "Oh, interesting! What did you think of it?", "Good idea. Small steps help.",
           "Ha, I can picture that.", "How did that go in the end?", "That's a lot for one day.",
           "I'm glad you made time for it.", "Sounds like a proper {adj} day.", "Do you do that often?"]
WORDS = {"place": ["river", "park", "harbour", "canal", "old town", "cemetery", "allotments"],
         "room": ["kitchen", "bedroom", "hallway", "living room", "bathroom", "balcony"],
         "thing": ["chair", "shelf", "door handle", "bike light", "drawer", "window latch"],
         "topic": ["octopuses", "volcanoes", "bees", "old trains", "deep sea fish", "Roman roads", "glaciers"],
         "friend": ["Kai", "Rosa", "Omar", "Hanna", "Felix", "Zoe", "Mateo"],
         "food": ["tomatoes", "cheese", "apples", "fresh fish", "bread", "herbs"],
         "adj": ["busy", "long", "calm", "hectic", "slow", "odd", "good", "tiring"],
         "mood": ["tired", "relaxed", "restless", "content", "a bit flat", "cheerful"]}
PEOPLE = [
    {"name": "Sam", "dentist": "Dr. Okafor", "car": "a green Skoda", "allergy": "hazelnuts", "sister": "Ana",
     "sister_job": "a paramedic", "pet": ("cat", "Pixel"), "tea": "genmaicha", "artist": "Nina Simone",
     "dish": "shakshuka", "colleague": "Jonas", "book": "The Remains of the Day", "city_from": "Porto",
     "city_to": "Coimbra", "home_old": "Berlin", "home_new": "Lisbon", "work_old": "Zalando", "work_new": "a small "
     "bike shop", "holiday": "hiking in the Dolomites", "race": "first half marathon"},
    {"name": "Mia", "dentist": "Dr. Lindqvist", "car": "a red Fiat Panda", "allergy": "penicillin", "sister": "Lea",
     "sister_job": "a sound engineer", "pet": ("dog", "Biscuit"), "tea": "earl grey", "artist": "Radiohead",
     "dish": "mushroom risotto", "colleague": "Priya", "book": "Pachinko", "city_from": "Graz", "city_to": "Vienna",
     "home_old": "Munich", "home_new": "Hamburg", "work_old": "Siemens", "work_new": "a design studio",
     "holiday": "sailing around Croatia", "race": "first triathlon"},
    {"name": "Tomás", "dentist": "Dr. Haddad", "car": "a blue Toyota Yaris", "allergy": "shellfish",
     "sister": "Inês", "sister_job": "a pastry chef", "pet": ("parrot", "Kiwi"), "tea": "rooibos",
     "artist": "Caetano Veloso", "dish": "feijoada", "colleague": "Marta", "book": "Blindness",
     "city_from": "Braga", "city_to": "Faro", "home_old": "Madrid", "home_new": "Valencia", "work_old": "Telefónica",
     "work_new": "a school in the old town", "holiday": "surfing in Morocco", "race": "first marathon"},
    {"name": "Noor", "dentist": "Dr. Brennan", "car": "a silver Volvo estate", "allergy": "cat hair",
     "sister": "Yasmin", "sister_job": "a civil engineer", "pet": ("rabbit", "Clover"), "tea": "mint tea",
     "artist": "Fairuz", "dish": "lentil soup", "colleague": "Declan", "book": "Small Things Like These",
     "city_from": "Cork", "city_to": "Galway", "home_old": "Dublin", "home_new": "Edinburgh",
     "work_old": "a call centre", "work_new": "the city library", "holiday": "island hopping in Greece",
     "race": "first 10k race"},
    {"name": "Ben", "dentist": "Dr. Nakamura", "car": "a white Renault Zoe", "allergy": "pollen", "sister": "Clara",
     "sister_job": "a veterinarian", "pet": ("tortoise", "Humphrey"), "tea": "oolong", "artist": "Bon Iver",
     "dish": "pad thai", "colleague": "Sophie", "book": "Klara and the Sun", "city_from": "Leeds",
     "city_to": "York", "home_old": "Manchester", "home_new": "Bristol", "work_old": "an insurance firm",
     "work_new": "a climbing gym", "holiday": "camping in the Highlands", "race": "first cycling sportive"},
    {"name": "Elena", "dentist": "Dr. Moreau", "car": "a yellow Citroën 2CV", "allergy": "latex", "sister": "Irina",
     "sister_job": "a translator", "pet": ("hamster", "Nugget"), "tea": "jasmine tea", "artist": "Chopin",
     "dish": "borscht", "colleague": "Luca", "book": "War and Peace", "city_from": "Odesa", "city_to": "Kraków",
     "home_old": "Lyon", "home_new": "Bordeaux", "work_old": "a bank", "work_new": "a vineyard",
     "holiday": "skiing in the Alps", "race": "first swim across the lake"},
]
# Near misses: turns about a question's topic that do not hold its answer.
DISTRACTORS = [
    "My tooth has been aching, I really should see a dentist soon.", "The dentist's receptionist moved my "
    "appointment again.", "Looking at second-hand cars online, so many options.", "The car insurance renewal came, "
    "it went up again.", "Had a sneezing fit at the market, maybe I'm allergic to something.",
    "Reading every food label at the supermarket takes forever.", "My sister called, she's stressed about work.",
    "{sister} might change jobs, she hasn't decided.", "The neighbours' {animal} got into our garden again.",
    "Thinking about getting a pet, we'll see.", "I need to cut down on coffee, maybe switch to tea.",
    "Bought a new teapot at the flea market.", "The radio in the kitchen broke, I miss having music on.",
    "Went to a concert, the opening act was terrible.", "Cooking for eight people on Saturday, no idea what to make.",
    "I want to read more books this year.", "{colleague} and I had lunch, we talked about our holidays.",
    "{sister} is coming to visit next month.", "Started running again, my knees hurt.",
    "Signed up for a race in the autumn, I'm nervous.", "We need a holiday, I'm exhausted.",
    "Looking at flights for the summer, everything is expensive.", "Flat hunting is exhausting, viewed four places.",
    "Had a job interview today, fingers crossed.", "My commute to work is getting longer every month.",
]


def fill(rng: random.Random, template: str, p: dict[str, Any] | None = None) -> str:
    values = {k: rng.choice(v) for k, v in WORDS.items()}
    if p is not None:
        values.update(sister=p["sister"], colleague=p["colleague"], animal=p["pet"][0])
    return template.format(**values)


def message(rng: random.Random, fact: str | None = None) -> str:
    """A user message: one to three sentences of chit-chat, with ``fact`` (if any) among them."""
    parts = [chit_chat(rng) for _ in range(rng.choice((0, 1, 1, 2)) + (fact is None))]
    if fact is not None:
        parts.insert(rng.randint(0, len(parts)), fact)
    return " ".join(parts)


def chit_chat(rng: random.Random) -> str:
    if rng.random() < 0.35:
        return fill(rng, rng.choice(STANDALONE))
    text = f"{rng.choice(WHEN)} {rng.choice(DID)}, {rng.choice(FEEL)}."
    opener = rng.choice(OPENERS)
    text = opener + (text if opener else text[0].upper() + text[1:])
    return fill(rng, text)


class History:
    """One person's sessions, with turns planted at free places."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        days = [-(SESSIONS - 1 - i) * 10 - rng.randint(0, 3) for i in range(SESSIONS)]
        self.sessions: list[dict[str, Any]] = [{"name": f"chat {i + 1}", "day": d, "turns": []}
                                                for i, d in enumerate(days)]
        self.used: set[tuple[int, int]] = set()
        for s in self.sessions:
            for t in range(TURNS):
                s["turns"].append(["user", message(rng)] if t % 2 == 0
                                  else ["assistant", fill(rng, rng.choice(REPLIES))])

    def plant(self, session: int, *turns: str) -> int:
        """Put ``turns`` (alternating user, assistant, ...) at a free place; returns the first turn's index."""
        free = [t for t in range(0, TURNS - len(turns) + 1, 2)
                if not any((session, t + i) in self.used for i in range(len(turns)))]
        start = self.rng.choice(free)
        for i, text in enumerate(turns):
            user = i % 2 == 0
            self.sessions[session]["turns"][start + i] = ["user" if user else "assistant",
                                                          message(self.rng, text) if user else text]
            self.used.add((session, start + i))
        return start

    def stated(self, session: int, text: str, reply: str) -> list[int]:
        """A fact said outright: the evidence is that turn."""
        return [session, self.plant(session, text, reply)]

    def answered(self, session: int, lead: str, question: str, answer: str, reply: str) -> list[int]:
        """A fact given as the answer to the companion's question: the evidence is the answer turn."""
        return [session, self.plant(session, lead, question, answer, reply) + 2]


def person_history(p: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    h = History(rng)
    questions: list[dict[str, Any]] = []

    def ask(kind: str, question: str, *evidence: list[int]) -> None:
        questions.append({"type": kind, "question": question, "evidence": list(evidence)})

    animal, petname = p["pet"]
    ask("single", "What's the name of my dentist?",
        h.answered(3, "I finally found a new dentist, near the station.", "Oh good. Who did you go with?",
                   f"{p['dentist']}. She explains everything before she does it.", "That makes a difference."))
    ask("single", "Which car did I end up buying?",
        h.answered(7, "Guess what I did today: I bought a car!", "No way! Which one?",
                   f"{p['car'][0].upper() + p['car'][1:]}, second hand but in great shape.", "Congratulations!"))
    ask("single", "What food allergy do I have?",
        h.stated(11, f"The tests came back: I'm allergic to {p['allergy']}.", "Oh no, you'll have to be careful."))
    ask("single", "What does my sister do for a living?",
        h.answered(14, f"My sister {p['sister']} has news about her work.", "Oh? What does she do now?",
                   f"She started as {p['sister_job']} this week, long shifts.", "She must be excited."))
    ask("single", f"What is my {animal} called?",
        h.answered(18, f"We adopted a {animal}!", "How lovely! What did you name him?",
                   f"{petname}, the kids chose it.", "What a lovely name."))
    ask("preference", "Which tea do I like best?",
        h.stated(5, f"Honestly nothing beats a cup of {p['tea']} in the morning.", "A classic choice."))
    ask("preference", "What music have I been into?",
        h.answered(20, "I've had the same album on repeat for a week.", "Whose is it?",
                   f"{p['artist']}, I can't get enough.", "Great taste."))
    ask("preference", "What's my favourite thing to cook?",
        h.stated(26, f"My favourite dish to make is {p['dish']}, I make it every Sunday.", "Sounds delicious."))
    ask("multi", "Which book did my colleague recommend, and did I finish it?",
        h.stated(8, f"{p['colleague']} from work recommended a novel called {p['book']}.", "I hope you like it."),
        h.stated(24, f"I finished {p['book']} last night, the ending made me cry.", "Books like that stay with you."))
    ask("multi", "Where does my sister live now, and where did she live before?",
        h.stated(12, f"{p['sister']} is leaving {p['city_from']}, she found a flat elsewhere.", "Big change for her."),
        h.answered(29, f"Visited {p['sister']} last weekend.", "How is her new place?",
                   f"Lovely, {p['city_to']} suits her, it's near the sea.", "How nice."))
    ask("temporal", f"When did I do my {p['race']}?",
        h.stated(16, f"Today I finished my {p['race']}! My legs are jelly.", "Amazing, congratulations!"))
    month_session = 22
    ask("temporal", "What was I doing on my holiday?",
        h.stated(month_session, f"Greetings from my holiday, we are {p['holiday']}.", "Enjoy every minute!"),
        h.stated(month_session + 1, f"Back home after {p['holiday']}, already missing it.", "Welcome back."))
    ask("changed", "Where do I live now?",
        h.answered(33, "We finally moved! The boxes are everywhere.", "Congratulations! How is the new city?",
                   f"{p['home_new']} is wonderful so far, the light is amazing.", "Welcome to your new home!"))
    h.stated(2, f"I've lived in {p['home_old']} for six years now.", "That's a long time.")  # the old fact
    ask("changed", "Where do I work these days?",
        h.stated(31, f"First week at my new job at {p['work_new']}, very different.", "Exciting change!"))
    h.stated(4, f"Another long day at {p['work_old']}, the office is freezing.", "Hang in there.")
    evidence_sessions = {e[0] for q in questions for e in q["evidence"]}
    for text in DISTRACTORS:  # each near miss in a session that holds no evidence
        session = rng.choice([s for s in range(SESSIONS) if s not in evidence_sessions])
        h.stated(session, fill(rng, text, p), fill(rng, rng.choice(REPLIES)))
    return {"person": p["name"], "sessions": h.sessions, "questions": questions,
            "month_question": {"session": month_session}}


def main() -> None:
    rng = random.Random(2024)
    data = {"format": "lyra-recall-eval", "version": 2, "people": [person_history(p, rng) for p in PEOPLE]}
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    turns = sum(len(s["turns"]) for p in data["people"] for s in p["sessions"])
    questions = sum(len(p["questions"]) for p in data["people"])
    print(f"wrote {OUT}: {len(data['people'])} people, {turns} turns, {questions} questions")


if __name__ == "__main__":
    main()
