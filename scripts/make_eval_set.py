#!/usr/bin/env python3
"""Write the recall evaluation set, deterministically: ``eval/recall_set.json``.

Several synthetic people, each with a year of conversations (a session every
ten days or so, chit-chat that shares their vocabulary), with facts planted in
known turns and questions about them phrased differently from the evidence:
single facts, preferences, facts spread over two sessions, "when did I ..." and
"what was I doing in <month>", and facts that changed (only the newer turn
counts). Dates are offsets in days from the last session, so the evaluation
can anchor them to "now".

    python scripts/make_eval_set.py          # rewrites eval/recall_set.json
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "eval" / "recall_set.json"
SESSIONS, TURNS = 36, 14
FILLER_USER = [
    "The weather was {w} again, I stayed in and read for a while.", "Work was {adj} today, lots of meetings.",
    "I cooked something simple for dinner, nothing special.", "Traffic on the way home was {adj}.",
    "I think I need more sleep, I'm a bit tired.", "Went for a short walk by the {place} after lunch.",
    "My phone keeps running out of battery, so annoying.", "I watched a documentary about {topic} last night.",
    "Had coffee with a friend, we talked about {topic}.", "I'm trying to drink more water and less coffee.",
    "The neighbours were loud again yesterday evening.", "I cleaned the flat and did the laundry.",
    "Thinking about planning a trip somewhere warm.", "I started a puzzle with a thousand pieces.",
]
FILLER_BOT = ["That sounds {adj}. How are you feeling about it?", "I see. Did anything else happen today?",
              "Nice. Tell me more if you like.", "That makes sense. Take care of yourself.",
              "Oh, interesting! What did you think of it?", "Good idea. Small steps help."]
WORDS = {"w": ["grey", "rainy", "cold", "windy", "sunny"], "adj": ["busy", "long", "calm", "hectic", "slow"],
         "place": ["river", "park", "harbour", "canal"], "topic": ["octopuses", "volcanoes", "bees", "old trains"]}
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


def fill(rng: random.Random, template: str) -> str:
    return template.format(**{k: rng.choice(v) for k, v in WORDS.items()})


def person_history(p: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    days = [-(SESSIONS - 1 - i) * 10 - rng.randint(0, 3) for i in range(SESSIONS)]
    sessions = [{"name": f"chat {i + 1}", "day": d, "turns": []} for i, d in enumerate(days)]
    for s in sessions:
        for t in range(TURNS):
            s["turns"].append(["user" if t % 2 == 0 else "assistant",
                               fill(rng, rng.choice(FILLER_USER if t % 2 == 0 else FILLER_BOT))])
    questions: list[dict[str, Any]] = []

    def plant(session: int, text: str, reply: str) -> list[int]:
        turn = 2 * rng.randint(1, TURNS // 2 - 2)
        sessions[session]["turns"][turn] = ["user", text]
        sessions[session]["turns"][turn + 1] = ["assistant", reply]
        return [session, turn]

    def ask(kind: str, question: str, *evidence: list[int]) -> None:
        questions.append({"type": kind, "question": question, "evidence": list(evidence)})

    animal, petname = p["pet"]
    ask("single", "What's the name of my dentist?",
        plant(3, f"I finally found a new dentist, {p['dentist']}, her practice is near the station.", "Good to hear!"))
    ask("single", "Which car did I end up buying?",
        plant(7, f"Big news: I bought {p['car']}, second hand but in great shape.", "Congratulations on the car!"))
    ask("single", "What food allergy do I have?",
        plant(11, f"The tests came back: I'm allergic to {p['allergy']}.", "Oh no, you'll have to be careful."))
    ask("single", "What does my sister do for a living?",
        plant(14, f"{p['sister']} started her new job as {p['sister_job']} this week.", "She must be excited."))
    ask("single", f"What is my {animal} called?",
        plant(18, f"We adopted a {animal} and named him {petname}!", "What a lovely name."))
    ask("preference", "Which tea do I like best?",
        plant(5, f"Honestly nothing beats a cup of {p['tea']} in the morning.", "A classic choice."))
    ask("preference", "What music have I been into?",
        plant(20, f"I can't stop listening to {p['artist']} lately, on repeat all day.", "Great taste."))
    ask("preference", "What's my favourite thing to cook?",
        plant(26, f"My favourite dish to make is {p['dish']}, I make it every Sunday.", "Sounds delicious."))
    ask("multi", "Which book did my colleague recommend, and did I finish it?",
        plant(8, f"{p['colleague']} from work recommended a novel called {p['book']}.", "I hope you like it."),
        plant(23, f"I finished {p['book']} last night, the ending made me cry.", "Books like that stay with you."))
    ask("multi", "Where does my sister live now, and where did she live before?",
        plant(12, f"{p['sister']} is leaving {p['city_from']}, she found a flat elsewhere.", "Big change for her."),
        plant(29, f"Visited {p['sister']} in her new place in {p['city_to']}, she loves it.", "How nice."))
    ask("temporal", f"When did I do my {p['race']}?",
        plant(16, f"Today I finished my {p['race']}! My legs are jelly.", "Amazing, congratulations!"))
    month_session = 22
    ask("temporal", "What was I doing on my holiday?",
        plant(month_session, f"Greetings from my holiday, we are {p['holiday']}.", "Enjoy every minute!"),
        plant(month_session + 1, f"Back home after {p['holiday']}, already missing it.", "Welcome back."))
    ask("changed", "Where do I live now?",
        plant(33, f"We finally moved to {p['home_new']}, the boxes are everywhere.", "Welcome to your new home!"))
    plant(2, f"I've lived in {p['home_old']} for six years now.", "That's a long time.")  # the old fact: not evidence
    ask("changed", "Where do I work these days?",
        plant(31, f"First week at my new job at {p['work_new']}, very different.", "Exciting change!"))
    plant(4, f"Another long day at {p['work_old']}, the office is freezing.", "Hang in there.")
    return {"person": p["name"], "sessions": sessions, "questions": questions,
            "month_question": {"session": month_session}}


def main() -> None:
    rng = random.Random(2024)
    data = {"format": "lyra-recall-eval", "version": 1, "people": [person_history(p, rng) for p in PEOPLE]}
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    turns = sum(len(s["turns"]) for p in data["people"] for s in p["sessions"])
    questions = sum(len(p["questions"]) for p in data["people"])
    print(f"wrote {OUT}: {len(data['people'])} people, {turns} turns, {questions} questions")


if __name__ == "__main__":
    main()
