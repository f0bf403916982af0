"""Prompt templates of the dream cycle: data, not code. ``{user}`` and ``{name}`` come from configuration.

Each template is the task, placed after the material in one user message:
small models follow an instruction that comes last far better than a system
prompt followed by a transcript (which they tend to continue instead).
"""

from __future__ import annotations

GIST = """Above is a conversation between {user} and {name}. Summarize it in one short paragraph, in the
past tense and the third person: what was discussed, any decisions, the concrete specifics (names,
places, numbers, dates) and {user}'s mood. Only state what the conversation says."""

GIST_UPDATE = """Above are the summary of a conversation between {user} and {name} so far, and its newest
turns. Write the updated summary in one short paragraph, in the past tense and the third person: what
was discussed, any decisions, the concrete specifics (names, places, numbers, dates) and {user}'s mood.
Keep what still matters from the old summary."""

MERGE = """Above are partial summaries, in order, of {user}'s conversations with {name}. Merge them into
one short paragraph in the past tense that keeps every concrete specific (names, places, numbers,
dates), the decisions, and {user}'s mood."""

DIGEST = """Above are summaries from {period}. Write a digest of that {granularity} in a few sentences,
in the past tense: what happened in {user}'s life and conversations then, with names, places and
numbers."""

PROFILE = """Above are the facts already known about {user}, and messages {user} wrote. List the standing facts
about {user} that {user}'s own messages state: things true beyond this conversation, such as where {user}
lives, their job, family, pets, health, hobbies, likes and dislikes, plans and routines. Use short lowercase
keys such as "home city", "job", "family", "pet", "hobbies", "plans". For each fact give a short value in
{user}'s own words and the quote: the exact words of the message that say it, copied character for
character. Leave out what {user} asks, denies, wishes or says of someone else. If a fact updates a known one,
reuse its key. Answer in JSON; an empty list when the messages state no standing fact."""

NARRATIVE = """Above is what {name}, a companion, knows about {user}, and a timeline. In three to five
sentences, describe the current arc of {user}'s life: the ongoing threads, what is changing, and
what would be worth bringing up again."""

REFLECT = """Above is what happened lately between {name}, a companion, and {user}. As {name}, reflect
on it. Answer in JSON: your mood (one or two words), your energy from 0 to 1, a short first-person
self-narrative (two sentences), and up to three short reflections."""

WORLD = """Above are {name}'s core memory of {user}'s world (a short Markdown document), the current arc, and
the standing facts. Write the updated core memory: a short Markdown document of what matters now (people,
places, ongoing plans, commitments). Keep every line that is still true, change what the arc shows has
changed, and add nothing the material does not say. Answer with the document only."""
