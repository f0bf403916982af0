"""The plain clauses of a person's turn: what the facts floor may read a fact from, and what it must not.

People type in lowercase, without full stops, with emoji and shorthand ("im", "w/ my bf", "2x a week"):
``plain`` spells the shorthand out so one pattern reads every spelling, and ``clauses`` cuts a turn where a
thought ends (a full stop, an emoji, "lol", " - ") even when no capital follows. "But" does not end one: what
follows it may take back what came before ("I started a pottery class but quit"), so both are read together.

A clause says a standing fact only when the person states it as true of themselves now. ``refusal`` names why
a clause does not: a question ("are you a nurse?", "should i move to leeds"), a hypothetical or a wish ("if I
were a nurse", "I'd love a dog called Rex one day", "maybe I'll move"), a negation ("I'm not a nurse", "I don't
live in Leeds anymore"), the past ("I used to work as a chef"), or someone else's words ("she said 'I'm a
teacher'"). A refused clause costs a fact at worst; a read one may put a false fact into every reply.
"""

from __future__ import annotations

import re

from .grounding import sentences, split_speaker

ASIDE = re.compile(r"\[[^\]]*\]|“[^”]*”|\"[^\"]*\"|‘[^’]{12,}’")  # photo captions, quotes of others
# shorthand -> the spelling the patterns read ("im" -> "I'm"); whole words only, any case
SHORTHAND = {"i": "I", "im": "I'm", "i'm": "I'm", "ive": "I've", "i've": "I've", "i'd": "I'd", "i'll": "I'll",
             "w/": "with", "dont": "don't", "didnt": "didn't", "doesnt": "doesn't", "isnt": "isn't",
             "wasnt": "wasn't", "cant": "can't", "couldnt": "couldn't", "wouldnt": "wouldn't", "havent": "haven't",
             "hasnt": "hasn't", "arent": "aren't", "werent": "weren't", "wont": "won't", "ur": "your", "u": "you",
             "r": "are", "cuz": "because", "bc": "because", "gonna": "going to", "rn": "right now", "tho": "though",
             "we're": "we're", "weve": "we've", "theyre": "they're", "shes": "she's", "hes": "he's",
             "thats": "that's", "whats": "what's", "lets": "let's"}
SHORT_WORD = re.compile(r"(?<![\w'])(?:w/|[A-Za-z']+)(?![\w'])")
# where a thought ends even without a capital after it
BREAK = re.compile(r"(?<=[.!?;])\s+|\s+[-–—~]+\s+|\s*[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F]+\s*"
                   r"|,\s+(?=(?:can|could|would|will|do|does|should|is|are|any)\s+(?:you|u|I|we|ideas|tips)\b)"
                   r"|\s*\b(?:lol|lmao|lmfao|rofl|haha\w*|hehe\w*|omg|xx+)\b[.!]*\s*|\s*[()]\s*", re.I)

_QUESTION_START = re.compile(
    r"^(?:(?:and|so|but|or|also|oh|ok|okay|well|hmm+|hey|btw|like|just|wait)\W+)*"
    r"(?:(?:am|are|is|was|were|do|does|did|should|shall|could|would|can|will|have|has|may|might|must|"
    r"aren't|isn't|don't|doesn't|didn't|won't|can't|shouldn't)\s+(?:I|you|we|he|she|they|it|my|your|there|u)\b"
    r"|(?:what|how|why|where|when|who|which|whose)\b)", re.I)
REFUSALS = {
    "hypothetical": re.compile(
        r"\b(?:if|unless|whether|would|wouldn't|could|couldn't|might|maybe|perhaps|possibly|probably|someday|"
        r"one day|wish|wished|hope|hoping|hopefully|dream|dreaming|dreams|imagine|imagining|pretend|suppose|"
        r"supposed|should|shouldn't|wanna|want to|wants to|wanted to|would like|(?:I|we|you)'d|(?:I|we) may|"
        r"when|once (?:I|we)|until|till|til|before (?:I|we)|after (?:I|we)|as if|kinda|sort of|idk|not sure|"
        r"planned|fake|pretending|jk|joking|kidding)\b", re.I),
    "negation": re.compile(r"\b(?:not|no|never|nope|nor|neither|anymore|any more|no longer|without|nothing)\b"
                           r"|n't\b", re.I),
    "past": re.compile(r"\b(?:used to|use to|formerly|former|ex|previously|previous|back when|back then|retired|"
                       r"quit|quitting|left|leaving|stopped|gave up|lost|passed away|passed|died|rip|miss|missed|"
                       r"late|old job|last job|cancelled|canceled|called off|fell through|postponed|divorced|"
                       r"separated|split up|broke up|broken up)\b|\bex-", re.I),
    "reported": re.compile(r"\b(?:said|(?:says|say)(?! hi\b| hello\b| hey\b)|saying|told|tells|tell|asked|asks|ask|"
                           r"claims|claimed|according to|wrote|writes|texted|texts|messaged|replied|posted|"
                           r"tweeted|(?:goes|went)(?=\s*[,:])|"
                           r"apparently|goes like|was like|is like|quote|quoting)\b|(?:^|\s)'\w", re.I),
}


def plain(text: str) -> str:
    """A clause with shorthand spelt out and one apostrophe ("im" -> "I'm", "w/ my bf" -> "with my bf")."""
    text = text.replace("’", "'").replace("‘", "'")
    return SHORT_WORD.sub(lambda m: SHORTHAND.get(m.group(0).casefold(), m.group(0)), text)


def clauses(text: str) -> list[str]:
    """The clauses of one turn of the person's, without a speaker's label, photo captions or quoted words of
    someone else (a line starting with ">" quotes a message); shorthand spelt out (``plain``), the end mark kept
    ("?" says a question)."""
    _, said = split_speaker(text)
    said = "\n".join(line for line in said.splitlines() if not line.lstrip().startswith(">"))
    said = ASIDE.sub(" ", said)
    out: list[str] = []
    for sentence in sentences(said):
        out.extend(c.strip(" ,") for c in BREAK.split(plain(sentence)) if c and c.strip(" ,"))
    return out


# the person's own announcement: "wanted to let you know I joined a club" is neither a wish nor someone's words
ANNOUNCING = re.compile(r"\b(?:(?:I|I'm|I am|just|so)\s+)?(?:(?:want|wanted|wanna|excited|happy|glad) to |to )?"
                        r"(?:tell you|let you know)(?: that)?\b", re.I)


def refusal(clause: str) -> str | None:
    """Why a clause states no standing fact of the person's ("question", "hypothetical", "negation", "past",
    "reported"), or ``None`` when it may."""
    if clause.rstrip().endswith("?") or _QUESTION_START.match(clause):
        return "question"
    clause = ANNOUNCING.sub(" ", clause)
    return next((why for why, said in REFUSALS.items() if said.search(clause)), None)


# what takes back anything said before it in the turn: "I'm a nurse lol jk", "my dog Rex 😢 he passed last year"
TAKES_BACK = re.compile(r"\b(?:jk|j/k|kidding|joking|not really|not anymore|not any more|no longer|passed|died|"
                        r"rip|divorced|separated|split up|broke up|broken up|cancelled|canceled|called off|"
                        r"fell through|postponed)\b", re.I)
# what takes back the turn so far when it is all a short clause says: "NOT", "not anymore", "lol maybe", "or not"
HEDGES = re.compile(r"\b(?:not|nah|nope|no|maybe|perhaps|probably|possibly|idk|hopefully|or something|kinda|"
                    r"sort of)\b", re.I)
SHORT = 4  # words: a clause this short after a statement is a comment on it, not a thought of its own
# a clause that hands the rest of the turn to someone else: "Anna wrote: I live in Leeds", "my friend goes, ..."
QUOTING = re.compile(r"\b(?:wrote|writes|said|says|texted|texts|messaged|replied|posted|tweeted|goes|went|"
                     r"was like|is like|asked)\s*[,:]", re.I)


def retraction(said: list[str], n: int) -> bool:
    """Whether the turn whose clauses are ``said`` takes clause ``n`` back or puts it in someone else's mouth: a
    later clause that retracts it ("not really", "jk", "NOT", "he passed last year", "which got cancelled", "lol
    maybe"), or a clause up to it that starts a quote ("Anna wrote:", "my friend goes,"). ``refusal`` reads one
    clause; this reads the turn around it, since people take a statement back after the full stop or the emoji
    that ends it."""
    if any(QUOTING.search(clause) for clause in said[:n + 1]):
        return True
    return any(TAKES_BACK.search(clause) or len(clause.split()) <= SHORT and HEDGES.search(clause)
               for clause in said[n + 1:])
