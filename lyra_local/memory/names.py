"""Who is called what: the names each side of a conversation goes by, learnt from how they are addressed.

People writing to each other rarely label their messages; they call each
other by name or nickname ("hey Mel!", "thanks, Caro", "my name is Emily").
A question names a person the way the asker knows them ("What are Caroline's
hobbies?"), which may be the full name of a nickname used in the messages, so
a question's name matches a learnt one when one begins the other ("caro" and
"caroline", "mel" and "melanie", "john" and "johnny").

Pure functions over (role, text) pairs; recall (``memory/recall.py``) keeps
what they learn for as long as the store has not grown much, and forgets it
on any forget.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

OTHER = {"user": "assistant", "assistant": "user"}
_GREETING = (r"(?i:hey+|hi+|hiya|hello|yo|morning|good morning|evening|good evening|night|good night|thanks|"
             r"thank you|thx|congrats|congratulations|aw+|wow|omg|oh|ok|okay|sorry|bye|see you|love you|"
             r"miss you|welcome|dear|haha+|lol)\b")
ADDRESSED = (
    re.compile(rf"^\W*{_GREETING}\W{{0,2}}\s*([A-Z][a-z]+)\b(?!['’])"),  # "Hey Mel, how are you"
    re.compile(rf"^\W*{_GREETING}\W{{0,2}}\s*([a-z]+)(?=\s*(?:[!?.,:;)]|$|[^\w\s'’]))"),  # "hey mel!"
    re.compile(r",\s*([A-Za-z][a-z]+)\s*[!?.]*\W*$"),  # "That's so cool, Caro!"
    re.compile(r"^\W*([A-Z][a-z]+),\s"),  # "Caro, I signed up too"
)
SELF_NAMED = re.compile(r"\b(?i:my name is|my name's|call me)\s+([A-Za-z][a-z]+)\b(?!['’])")
WORD = re.compile(r"[a-z]+")
LABEL = re.compile(r"^[A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*)?:\s")  # "Caroline: " heading a transcript's line
QUESTION_WORD = re.compile(r"[A-Za-z]+")  # "Caro's" is "Caro" and "s"
NOT_NAMES = frozenset("""
there guys all everyone everybody folks friend friends man dude bro sis babe baby honey love dear sweetie
buddy pal mate mom mum dad you me it that this so for and too the a an i my our your what how just well
yes yeah no ok okay sure thanks thank really very much again lol haha wow oh omg great good nice cool
amazing awesome sorry again then now here today tonight always never totally true right worries problem
huh hmm bye anyway anyways honestly seriously actually basically besides plus still sadly luckily unfortunately
however instead otherwise meanwhile recently lately finally first second third last next then also btw yesterday
tomorrow tonight guess girl boy hun hon hmmm ah ahh um umm uh er alright fine maybe perhaps of course ugh
""".split())
MIN_TIMES = 2  # a name heard once could be anything
ADDRESS_SHARE = 0.2  # a name is said mostly to call someone; "thing" or "definitely" mostly not


def addressed_names(messages: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Each name learnt, lower case, to the role it names: called so by the other side, or by itself."""
    return addressed_speakers((role, OTHER[role], text) for role, text in messages if role in OTHER)


def addressed_speakers(messages: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """Each name learnt, lower case, to the speaker it names, from (speaker, whom they speak to, text): a name
    is the one spoken to's when it calls them ("hey Mel!"), the speaker's own when they give it ("call me Mel")."""
    heard: dict[str, Counter[str]] = {}
    said: Counter[str] = Counter()
    for speaker, addressee, text in messages:
        text = LABEL.sub("", text, count=1)  # who speaks a line is not whom it calls: "Mel: Caroline, hi!"
        said.update(WORD.findall(text.lower()))
        for pattern in ADDRESSED:
            for match in pattern.finditer(text):
                _count(heard, match.group(1), addressee)
        for match in SELF_NAMED.finditer(text):
            _count(heard, match.group(1), speaker)
    out = {}
    for name, roles in heard.items():
        (role, times), *rest = roles.most_common()
        if times >= MIN_TIMES and (not rest or times >= 3 * rest[0][1]) and times >= ADDRESS_SHARE * said[name]:
            out[name] = role
    return out


def _count(heard: dict[str, Counter[str]], name: str, role: str) -> None:
    word = name.lower()
    if len(word) >= 2 and word not in NOT_NAMES:
        heard.setdefault(word, Counter())[role] += 1


def same_name(a: str, b: str) -> bool:
    """Two forms of one name: equal, or one begins the other and is at least three letters ("mel", "melanie")."""
    short, long = sorted((a, b), key=len)
    return short == long or (len(short) >= 3 and long.startswith(short))


def nickname_of(word: str, name: str) -> bool:
    """Whether ``word`` may be a nickname or another spelling of ``name``: one begins the other, or they share
    their first three letters or more ("carrie" and "caroline", "mellie" and "melanie", "timmie" and "tim")."""
    if same_name(word, name):
        return True
    shared = next((i for i, (a, b) in enumerate(zip(word, name, strict=False)) if a != b), min(len(word), len(name)))
    return shared >= 3


def roles_named(question: str, names: Mapping[str, str],
                unused: Callable[[str], bool] | None = None) -> dict[str, str]:
    """The words of a question that name a side of the conversation (lower case), each to its role.

    A word names a side when it is a name learnt, or, written with a capital
    not at the start of the question or a word no turn uses (``unused``), a
    nickname or another form of one (``nickname_of``: "Caroline" or "carrie"
    for "caro"): "What car did she buy?" names nobody, "car" being a word the
    turns use. A name the question calls
    someone by ("Mel, where did I go?") is who is asked, not who it is about.
    """
    called = {m.group(1).lower() for pattern in ADDRESSED for m in pattern.finditer(question)}
    out = {}
    for n, match in enumerate(QUESTION_WORD.finditer(question)):
        written = match.group(0)
        word = written.lower()
        if word in called:
            continue  # "Lyra, what did I say?" asks Lyra; it is not about her
        loose = (written[0].isupper() and n > 0) or (unused is not None and len(word) >= 3 and unused(word))
        roles = ({names[word]} if word in names else
                 {role for name, role in names.items() if loose and nickname_of(word, name)})
        if len(roles) == 1:
            out[word] = roles.pop()
    return out


def without_names(question: str, named: Iterable[str]) -> str:
    """``question`` with each of these names (and its possessive) said as "someone"."""
    words = sorted(set(named), key=len, reverse=True)
    if not words:
        return question
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\b", re.IGNORECASE)
    return pattern.sub("someone", question)
