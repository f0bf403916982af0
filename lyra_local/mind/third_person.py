"""Third-person edits of what someone said, for the summaries written without a model.

The floor's summary of a conversation is built from its own sentences. Read
back as ``Maya said, "…" Lyra said, "…"`` they are a transcript, not a
summary; these pure functions edit one sentence into a summary's sentence
where the edit is mechanical: "I'm thinking of moving" -> "Maya is thinking of
moving", "my sister" -> "Maya's sister", "can you help me prepare?" -> "Maya
asked for help to prepare", and a long reply to what it listed or its first
plain statement. Each returns ``None`` where the edit is not mechanical ("we",
"I'd", a verb it does not know, a question of another shape): the caller then
quotes the sentence as it was said, attributed once. An edit never changes a
word's meaning: negations, tenses and the words themselves are kept; only the
pronouns of the speaker (and of the one spoken to) and their verbs' agreement
change. Nothing here may add a word that says something the sentence did not.
"""

from __future__ import annotations

import re
import unicodedata

WORD = re.compile(r"(\w+(?:['’]\w+)*)")
PLURAL = frozenset("we us our ours ourselves let's lets we're we've we'll we'd".split())
YOU = frozenset("you u ya".split())
YOUR = frozenset("your ur yours".split())
SELF = frozenset("myself yourself yourselves y'all yall".split())
ADVERBS = frozenset("""really also just always never usually often still actually finally totally kinda sometimes
only even already recently literally definitely probably honestly seriously mostly generally currently barely
hardly rarely almost normally def basically""".split())
UNCHANGED = frozenset("""can can't cant cannot could couldn't couldnt would wouldn't wouldnt should shouldn't
shouldnt might must may will won't wont shall was wasn't wasnt did didn't didnt had hadn't hadnt""".split())
AGREEMENT = {"am": "is", "have": "has", "haven't": "hasn't", "havent": "hasn't", "do": "does", "don't": "doesn't",
             "dont": "doesn't", "are": "is", "aren't": "isn't", "arent": "isn't", "were": "was", "weren't": "wasn't"}
# Verbs whose present tense takes an -s in the third person. Words whose past and present are one spelling
# ("read", "put", "quit") are not here: "I read" could be either, and an edit must not choose.
VERBS = frozenset("""work live love like hate want need think feel hope go come get know see say make take try play
walk run swim cook write study teach learn plan mean miss enjoy prefer wish use keep start stop help spend visit
move stay leave remember forget believe guess wonder worry care agree understand look watch listen call text drive
ride train practice practise paint draw sing dance volunteer own rent share find hear eat drink sleep wake wear buy
sell pay save lose win owe struggle manage deal handle cry fly carry bake garden knit sew climb hike cycle shop
nurse commute juggle attend belong seem sound mind collect""".split())
PAST = frozenset("""went got had did made saw said took came knew thought felt found gave told became left heard met
ran swam began sang wrote bought brought caught taught fought sold sent spent built lost won paid kept slept meant
ate drank drove rode wore chose broke spoke woke forgot grew threw flew drew held stood sat understood fell""".split())
NOT_PAST = frozenset("need feed seed bleed speed breed proceed succeed exceed indeed shed bed red wed embed".split())
INTERJECTIONS = frozenset("""oh omg wow haha hahaha lol ok okay yeah yes yep hey hi hello well aw aww ah hmm um
thanks thank congrats congratulations great sure absolutely certainly of course awesome cool nice""".split())
TRAILING = re.compile(r"(?:\s+(?:lol|haha+|lmao|xx+|xd|:\)|:D))+\s*$", re.IGNORECASE)
IMPERATIVES = frozenset("""tell give show let send explain list describe check remind please imagine thank thanks
consider avoid""".split())
BARE_BEFORE = frozenset("help helps helping let lets make makes see watch hear".split())
SUBJECT_AFTER = frozenset("""and but so if when because that or then while as since unless until once before after
though although where""".split())
# A quote mark, straight or curly; a single one only where it opens a quote ("'I quit'"), not an apostrophe
# ("don't", "St James's"). Words inside a quote are someone else's: an edit must not rename their "I" and "you".
QUOTE = re.compile(r"[\"“”‘]|(?:^|(?<=[\s(\[]))['’](?=[A-Za-z])")
SUBJECTS = r"(?:i|i'm|im|i've|ive|i'll|i'd|you|u|you're|youre|you've|you'll|you'd|we|we're|we've)"
# "He goes, I'm a doctor", "she told me you are fired": speech reported without quote marks. "goes", "went" and
# "like" report only before a comma or colon ("I went home" reports nothing); "that" makes the speech indirect,
# where pronouns are already the reporter's ("she said that I was right"), so it is no report here.
REPORTING = r"said|says|say|told|tells|tell|texted|texts|wrote|writes|asked|asks|replied|yelled|shouted"
REPORTED = re.compile(rf"\b(?:(?:{REPORTING})(?:\s+(?:me|him|her|them|us|you|u|(?!that\b)\w+))?\s*[,:]?"
                      rf"|(?:goes|go|went|like)\s*[,:])\s+['’\"“‘]?{SUBJECTS}\b", re.IGNORECASE)
YOU_SUBJECT = frozenset("you're youre you've youve you'll youll you'd youd".split())
# After these "you" opens a clause of its own, where people mean anyone ("I think you never know"): a subject
COGNITIVE = frozenset("think thought guess know knew feel felt mean meant believe suppose reckon find found realise "
                      "realize realised realized learn learned learnt".split())
OPENS_A_CLAUSE = SUBJECT_AFTER | ADVERBS | COGNITIVE | INTERJECTIONS - {"thank", "thanks"}  # not "thank you"
ADDRESSING = frozenset("hope hopes hoped wish wishes trust".split())  # "I hope you are well": the one spoken to
OPENERS = frozenset("""the a an this that these those it it's its he she they he's she's they're his her their
there there's here one some my""".split())


def possessive(name: str) -> str:
    """"Maya" -> "Maya's", "Jess" -> "Jess's" (as "St James's" is written), "the user" -> "the user's"."""
    return f"{name}'s"


def third_person_verb(word: str) -> str | None:
    """What ``word`` becomes after a third-person subject ("work" -> "works", "went" -> "went"), or ``None``."""
    lower = word.lower().replace("’", "'")
    if lower in UNCHANGED or lower in PAST:
        return word
    if lower in AGREEMENT:
        return AGREEMENT[lower]
    if lower in VERBS:
        if lower == "go" or lower.endswith(("s", "sh", "ch", "x", "z", "o")):
            return word + "es"
        if lower.endswith("y") and lower[-2:-1] not in "aeiou":
            return word[:-1] + "ies"
        return word + "s"
    if lower.endswith("ed") and len(lower) >= 4 and lower not in NOT_PAST:
        return word
    return None


def _swap(sentence: str, me: str | None, you: str | None) -> tuple[str, bool] | None:
    """The sentence with the speaker (``me``) and the one spoken to (``you``) named, and whether it changed."""
    parts = WORD.split(sentence)
    changed = False
    for i in range(1, len(parts), 2):
        lower = parts[i].lower().replace("’", "'")
        if lower in PLURAL or lower in SELF or lower in ("i'd", "you'd", "youd"):
            return None
        name = me if lower in ("i", "i'm", "im", "i've", "ive", "i'll", "me", "my", "mine") else \
            you if lower in YOU | YOUR | {"you're", "youre", "you've", "you'll"} else ""
        if name is None:
            return None
        if not name:
            continue
        changed = True
        if lower in ("my", "mine") or lower in YOUR:
            parts[i] = possessive(name)
        elif lower in ("i'm", "im", "you're", "youre"):
            parts[i] = f"{name} is"
        elif lower in ("i've", "ive", "you've"):
            parts[i] = f"{name} has"
        elif lower in ("i'll", "you'll"):
            parts[i] = f"{name} will"
        elif lower == "me":
            parts[i] = name
        elif not _subject(parts, i, name, lower in YOU):
            return None
    return "".join(parts), changed


def _subject(parts: list[str], i: int, name: str, second: bool) -> bool:
    """Name the subject at ``parts[i]`` and make its verb agree; ``False`` where that is not mechanical.

    "you" after a word that is no conjunction is an object where no verb this knows follows ("for you", "thank
    you so much") or a bare infinitive does ("help you sleep"): it is named and no verb changes.
    """
    j = i + 2
    while j < len(parts) and parts[j].lower() in ADVERBS:
        j += 2
    verb = third_person_verb(parts[j]) if j < len(parts) and parts[j - 1].strip() == "" else None
    before = parts[i - 2].lower() if i >= 2 and not re.search(r"[,.;:!?]", parts[i - 1]) else ""
    if second and before and before not in SUBJECT_AFTER and (verb is None or before in BARE_BEFORE):
        parts[i] = name
        return True
    if verb is None:
        return False
    parts[i] = name
    parts[j] = verb
    return True


def reported(sentence: str) -> bool:
    """Whether the sentence holds someone's words as they said them: in quote marks, or after "said", "goes,"
    … and a first or second person ("He goes, I'm a doctor"). Its "I" and "you" are not the speaker's."""
    return bool(QUOTE.search(sentence) or REPORTED.search(sentence.replace("’", "'")))


def generic_you(sentence: str) -> bool:
    """Whether "you" is the subject of a clause in the sentence: "You never know what will happen" means
    anyone, and so may "so you feel rested"; renaming it (to the one spoken to, or by a reply to the person)
    would put a general remark in one person's mouth. "for you", "help you sleep", "thank you" are objects;
    "I hope you are well" addresses the one spoken to."""
    parts = WORD.split(sentence.replace("’", "'"))
    for i in range(1, len(parts), 2):
        lower = parts[i].lower()
        if lower not in YOU and lower not in YOU_SUBJECT:
            continue
        before = parts[i - 2].lower() if i >= 2 and not re.search(r"[,.;:!?]", parts[i - 1]) else ""
        if before in ADDRESSING:
            continue
        j = i + 2
        while j < len(parts) and parts[j].lower() in ADVERBS:
            j += 2
        after = parts[j].lower() if j < len(parts) and parts[j - 1].strip() == "" else ""
        verb = bool(after) and (third_person_verb(after) is not None or after in ("are", "were"))
        if lower in YOU_SUBJECT or not before or before in OPENS_A_CLAUSE or \
                verb and before not in BARE_BEFORE:
            return True
    return False


def tidy(sentence: str) -> str:
    """A sentence as a summary writes it: no trailing "lol" or emoji, capitalized, ending with one full stop."""
    text = sentence.strip()
    while text and unicodedata.category(text[-1]) in ("So", "Sk", "Cn"):
        text = text[:-1].rstrip()
    text = TRAILING.sub("", text).rstrip()
    text = re.sub(r"[!?.…,;:]+$", "", text).rstrip()
    return (text[:1].upper() + text[1:] + ".") if text else ""


def third_person(sentence: str, name: str, addressee: str | None = None) -> str | None:
    """A statement in the first person, said by ``name`` (to ``addressee``), in the third person; ``None`` when
    it has no first person in it or the edit is not mechanical."""
    first = WORD.search(sentence)
    if first is None or first.group(0).lower() in VERBS | IMPERATIVES:
        return None  # an imperative ("Tell me more") has no subject to name
    if reported(sentence) or generic_you(sentence):
        return None
    swapped = _swap(sentence, name, addressee)
    if swapped is None or not swapped[1]:
        return None
    return tidy(swapped[0])


QUESTIONS = [
    (re.compile(r"^(?:can|could|would|will) (?:you|u) (?:please |pls )?help (?:me|us) with (?P<x>.+)$", re.I),
     "asked for help with {x}"),
    (re.compile(r"^(?:can|could|would|will) (?:you|u) (?:please |pls )?help me (?:to )?(?P<x>.+)$", re.I),
     "asked for help to {x}"),
    (re.compile(r"^(?:can|could|would|will) (?:you|u) (?:please |pls )?(?P<x>.+)$", re.I), "asked {o} to {x}"),
    (re.compile(r"^how (?:do|can|should|could) i (?P<x>.+)$", re.I), "asked how to {x}"),
    (re.compile(r"^what should i (?P<x>.+)$", re.I), "asked what to {x}"),
    (re.compile(r"^should i (?P<x>.+)$", re.I), "asked whether to {x}"),
    (re.compile(r"^(?:any|got any|do (?:you|u) have any) (?P<k>tips|advice|ideas|suggestions|recommendations) "
                r"(?P<p>on|for|about) (?P<x>.+)$", re.I), "asked for {k} {p} {x}"),
]
ASKING = re.compile(r",\s+(?=(?:can|could|would|will) (?:you|u)\b|how (?:do|can|should|could) i\b|what should i\b|"
                    r"should i\b|any (?:tips|advice|ideas|suggestions))", re.I)


def asked(question: str, name: str, addressee: str | None) -> str | None:
    """What a question asked, without its subject ("can you help me prepare?" -> "asked for help to prepare"),
    or ``None`` for a question of another shape."""
    text = re.sub(r"[?!.\s]+$", "", question.strip())
    for pattern, template in QUESTIONS:
        m = pattern.match(text)
        if not m or ("{o}" in template and not addressee):
            continue
        rest = _swap(m.group("x"), name, None)
        if rest is None or not rest[0].strip() or len(rest[0].split()) > 16:
            return None
        return template.format(o=addressee, x=rest[0], k=m.groupdict().get("k", ""), p=m.groupdict().get("p", ""))
    return None


def edited(sentence: str, name: str, addressee: str | None = None, context: str | None = None) -> str | None:
    """One sentence of a person's, as a summary's sentence about them, or ``None`` where no edit is mechanical.

    A statement is turned to the third person; a question is said as what it
    asked ("Maya asked how to …"); a statement and a request in one sentence
    are both ("Maya has an interview on 2 May and asked for help to prepare."); a
    sentence with no first person that opens like a plain statement ("Jess says
    …") is said as mentioned ("Maya mentioned that Jess says …"). A sentence that reports someone's words
    ("She said \"I quit\"") is not edited: whose "I" is whose is not mechanical. ``context`` (the
    conversation) tells a name from a common word after "mentioned that".
    """
    if reported(sentence):
        return None
    split = ASKING.search(sentence)
    lead, question = (sentence[:split.start()], sentence[split.end():]) if split else (sentence, "")
    is_question = sentence.rstrip().rstrip("!").endswith("?")
    if question or is_question:
        what = asked(question or lead, name, addressee)
        if what is None:
            return None
        if not question:
            return tidy(f"{name} {what}")
        said = third_person(lead, name, addressee)
        return tidy(f"{said[:-1]} and {what}") if said else None
    said = third_person(sentence, name, addressee)
    if said is not None:
        return said
    plain = _swap(sentence, None, None)
    first = WORD.search(sentence)
    if plain is None or first is None or is_question or generic_you(sentence):
        return None
    opener = first.group(0)
    if opener.lower() in INTERJECTIONS or not (opener.lower() in OPENERS or opener[:1].isupper()
                                                and opener.lower() not in VERBS):
        return None
    return tidy(f"{name} mentioned that {_lower_opener(sentence.strip(), context)}")


def _lower_opener(text: str, context: str | None = None) -> str:
    """"The flats are cheaper" -> "the flats are cheaper" (after "that"); a name keeps its capital.

    A common word always loses it. Without ``context`` any other capital is kept (it may be a name). With the
    conversation as ``context`` a capital is kept only where the word looks like a name: "I", all capitals
    ("NHS"), a capital inside a word ("iPhone"), or written with its capital in the middle of a sentence
    somewhere ("… near Leith …"); "Fear of the hoover is common" becomes "fear of the hoover …"."""
    opener = text.split()[0] if text.split() else ""
    word = WORD.search(opener)
    lower = opener.lower()
    stem = lower.removesuffix("ing")
    known = VERBS | IMPERATIVES | set(AGREEMENT)
    common = lower in OPENERS | known or stem != lower and bool({stem, stem + "e", stem[:-1]} & known)
    if not opener or opener[1:] != opener[1:].lower():
        return text
    if not common and (context is None or word is None or word.group(0).upper() == word.group(0)
                       or _named_in(word.group(0), context)):
        return text
    return lower + text[len(opener):]


def _named_in(word: str, context: str) -> bool:
    """Whether ``word`` is written, capitalized as it is, in the middle of a sentence of ``context``."""
    for m in re.finditer(rf"(?<![\w'’]){re.escape(word)}(?![\w'’])", context):
        before = context[:m.start()].rstrip(" \t*_\"'“‘(")
        if before and before[-1] not in ".!?:\n-•#>" and not re.search(r"(?:^|\n)\s*\d{1,2}[.)]$", before):
            return True
    return False


def in_their_words(sentence: str, name: str) -> str:
    """The sentence as it was said, attributed once (the floor keeps at most one such in a summary)."""
    return f"In {possessive(name)} words: “{sentence.strip()}”"


LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+(.+)$")
HEAD = re.compile(r"^\*\*(.+?)\*\*|^__(.+?)__|^([^:]{3,80}):")
FLUFF = INTERJECTIONS | frozenset("here here's great good sure that's thats what sounds glad how".split())
REPLY = re.compile(r"^[\w'’ .-]{1,40}? (?:replied that|listed:|advised:) ")  # a reply reduced by ``reply_about``


NEGATIONS = frozenset("""not no never don't dont doesn't doesnt didn't didnt can't cant cannot won't wont
shouldn't shouldnt isn't isnt aren't arent wasn't wasnt nor without neither avoid stop""".split())
FUNCTION_WORDS = frozenset("""a an the to of in on at for with by from and or but as into about your you my me our
us their them it its this that these those is are be do does so if than then up out""".split())


def _item(item: str) -> tuple[str, str]:
    """A list item's label ("**Research the trust**: read …" -> "Research the trust") and its whole text, both
    without markdown."""
    m = HEAD.match(item.strip())
    head = next((g for g in m.groups() if g), "") if m else item.strip()
    return _unmarked(head), _unmarked(item)


def _unmarked(text: str) -> str:
    return re.sub(r"[*_`]+", "", text).strip().rstrip(":.;,!")


def _good_label(label: str, whole: str) -> bool:
    """Whether a label says what its item says: two or more content words, no negation in the item (a label
    drops the "not" of "Moving to Edinburgh: not a good idea"), and not a bare verb ("Stop:", "**Don't**")."""
    said = [w.lower().replace("’", "'") for w in WORD.findall(label)]
    content = [w for w in said if w not in FUNCTION_WORDS]
    negated = any(w.lower().replace("’", "'") in NEGATIONS or w.lower().endswith("n't")
                  for w in WORD.findall(whole))
    return len(content) >= 2 and not negated


def _points(reply: str, speaker: str, person: str, most: int) -> list[str] | None:
    """The points a reply listed, as its labels where every label says its item, else as its whole items where
    each is short; ``None`` where neither is (or a point's "I" or "you" cannot be named)."""
    items = [_item(m.group(1)) for line in reply.splitlines() if (m := LIST_ITEM.match(line))][:most + 1]
    shown = items[:most]
    if len(items) < 2:
        return None
    if all(_good_label(label, whole) for label, whole in shown):
        texts = [label for label, _ in shown]
    elif all(whole and len(whole.split()) <= 12 for _, whole in shown):
        texts = [whole for _, whole in shown]
    else:
        return None
    out = []
    for text in texts:
        swapped = None if reported(text) or generic_you(text) else _swap(text, speaker, person)
        if swapped is None:
            return None
        out.append(swapped[0])
    return out + ["and more"] * (len(items) > most)


def reply_about(reply: str, speaker: str, person: str, sentences: list[str], most: int = 3,
                context: str | None = None) -> str | None:
    """A long reply reduced to what it was about: the points it listed ("ChatGPT listed: research the trust;
    prepare examples."), else its first plain statement ("ChatGPT replied that it is normal to feel
    nervous."), else ``None``. ``sentences`` are the reply's sentences (the caller's splitter); ``context``
    (the conversation) tells a name from a common word at the start of a statement. A sentence with a quote
    or a general "you" ("You never know how an interview will go") is skipped, never renamed."""
    points = _points(reply, speaker, person, most)
    if points:
        return tidy(f"{speaker} listed: " + "; ".join(points))
    for sentence in sentences:
        first = WORD.search(sentence)
        if (not sentence.rstrip().endswith(".") or len(sentence.split()) < 6 or first is None
                or first.group(0).lower() in FLUFF or LIST_ITEM.match(sentence) or reported(sentence)
                or generic_you(sentence)):
            continue
        swapped = _swap(sentence, speaker, person)
        if swapped is None:
            continue
        text = _lower_opener(swapped[0].strip(), reply + "\n" + (context or ""))
        advice = first.group(0).lower() in VERBS | IMPERATIVES
        return tidy(f"{speaker} advised: {text}" if advice else f"{speaker} replied that {text}")
    return None
