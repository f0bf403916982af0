"""Whether a quote asserts a value of the person who said it, read from a dependency parse.

The rules are general rules of grammar, never lists of what people do or own:

- a question asserts nothing: the sentence ends with "?", starts with a
  wh-word, or puts its verb before its subject ("are you a nurse");
- a negation ("not", "never", "n't", "no" before the value) on the value or on
  a verb it hangs from takes it back;
- a modal ("would", "could", "might", "'ll") or an infinitive the value hangs
  from ("I want to be a nurse", "used to work as a chef") says a wish, a plan
  or a past, not a standing fact: only a plan may be read from it;
- a past "was"/"were" on the value says it held once ("I was a nurse"), and a
  past under a present a wish ("I wish I had a garden"); for the floor, which
  has no model to tell "we got a cat" from "we lost our cat", any past tense
  the value hangs from does, but for the keys said by what happened
  (``Key.past``: "we moved to Glasgow");
- a present progressive with a date says a plan ("moving to Leeds in
  September"): a plan, not a home city;
- the value is the speaker's when the clause it hangs from has a first-person
  subject ("I", "we"), no subject at all (people drop it: "been running 3x a
  week", "Sam here"), or the value is inside a noun phrase the speaker owns
  ("my dog Rex"); another subject makes it someone else's ("my sister is a
  nurse" is the sister's job, "he's a menace" the dog's).

Measured on LoCoMo's gold observations by ``scripts/eval_facts.py``
(docs/benchmarks.md). The parse is spaCy's small English pipeline
(``lyra_local/parser.py``); a ``Parse`` is any callable from text to a spaCy
``Doc``. Pure: no store, no model but the parser.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...memory.keys import BY_NAME, PLAN_KEYS, SPELLING

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

Parse = Callable[[str], "Doc"]
WORD = re.compile(r"[\w][\w'’]*")  # "me-time" is two words, as the parse splits it
SUBJECTS = ("nsubj", "nsubjpass", "csubj", "expl")
LOOSE = frozenset({"npadvmod", "dep", "intj", "meta", "vocative"})  # attachments that are no argument of a verb


@dataclass(frozen=True)
class Reading:
    """What the parse says of a value in a quote: why it is not the speaker's standing fact (``None``: it is),
    and the clause it was said in (what its key is judged by)."""

    refusal: str | None
    clause: str
    phrase: str = ""  # the value as the speaker's own, without its name ("my cat" for "cat Miso"), where it is
    noun: str = ""  # ... and its nouns alone ("cat"): what it is, without whose


def content_words(value: str) -> list[str]:
    """The words of a value that say something (spaCy's stop words are not: "a", "my", "the")."""
    stop = _stop_words()
    return [w for w in (m.group(0).casefold().replace("’", "'") for m in WORD.finditer(value)) if w not in stop]


@functools.cache
def _stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS  # here: importing spaCy takes half a second of every start-up

    return frozenset(STOP_WORDS)


def names_someone(value: str, names: Collection[str]) -> bool:
    """Whether a value is, or holds, one of ``names`` (the speakers', folded)."""
    return value.casefold() in names or any(w in names for w in content_words(value))


def read(parse: Parse, turn: str, quote: str, value: str, key: str | None, strict: bool = False) -> Reading:
    """Read ``value`` where ``quote`` stands in ``turn`` (the person's own words). ``strict``: for the floor,
    which has no model to tell a past that still holds ("we got a cat") from one that does not."""
    doc = parse(turn)
    found_at = _where(quote, turn)
    start, end = found_at if found_at else (0, len(turn))  # not found as typed: the whole turn is read
    tokens = [t for t in doc if start <= t.idx < end]
    wanted = content_words(value)
    if not wanted:
        return Reading("value_says_nothing", quote)
    found = [t for t in tokens if _forms(t) & set(wanted)]
    if {w for w in wanted if any(w in _forms(t) for t in found)} != set(wanted):
        return Reading("value_not_in_quote", quote)
    if _taken_back(doc, max(t.idx + len(t) for t in found)):
        return Reading("taken_back", quote)
    verdicts = [_verdict(t, found, key, strict) for t in found]
    refused = next(((why, clause) for why, clause in verdicts if why not in (None, "someone_else")), None)
    if refused:  # any word of the value asked, denied, wished or planned: the value is not a standing fact
        return Reading(*refused)
    ok = [clause for why, clause in verdicts if why is None]  # one word of it the speaker's ("a beagle, rufus")
    return Reading(None, ok[0], *_owned_phrase(found)) if ok else Reading(*verdicts[0])


_QUOTE_MARK = "['’‘`\"“”]"


def _where(quote: str, turn: str) -> tuple[int, int] | None:
    """Where the quote stands in the turn, as ``facts.find_quote`` matched it: up to case, spacing and which
    quote marks were typed ("I’m" for "I'm")."""
    words = quote.strip(" .!?,;:\"'“”’").split()
    if not words:
        return None
    pattern = r"\s+".join(re.sub(_QUOTE_MARK, _QUOTE_MARK, re.escape(w)) for w in words)
    match = re.search(pattern, turn, re.IGNORECASE)
    return (match.start(), match.end()) if match else None


NEGATIONS = frozenset({"not", "no", "nope", "never", "jk"})
TAKING_BACK = 4  # words: a negation this short after a statement comments on it ("not really", "NOT")
NEXT_SENTENCES = 2  # a past told of the value ("he passed last year") follows it this closely


def _taken_back(doc: Doc, end: int) -> bool:
    """Whether what follows the value in the turn takes it back: a short negated fragment ("I'm a nurse... NOT",
    "- not anymore"), or a dated past told of it ("he passed last year")."""
    after = [t for t in doc if t.idx >= end and not t.is_punct and not t.is_space]
    following = [s for s in doc.sents if s.end_char > end][:NEXT_SENTENCES + 1]
    for sentence in following:
        words = [t for t in sentence if t in after]
        if words and len(words) <= TAKING_BACK and _denies(words):
            return True
        root = sentence.root
        subject = subject_of(root)
        if sentence.start_char >= end and root.tag_ == "VBD" and subject is not None and \
                subject.morph.get("PronType", []) == ["Prs"] and not first_person(subject) and \
                any(t.ent_type_ == "DATE" for t in sentence):
            return True  # "my dog Rex 😢 he passed last year": what it was, told as over
    fragment = after[:TAKING_BACK + 1]
    return 0 < len(fragment) <= TAKING_BACK and _denies(fragment)


def _denies(words: list[Token]) -> bool:
    """A fragment that denies what came before: a negation and no verb of its own ("not really", "NOT",
    "- not anymore"); "Can't wait!" negates its own verb and takes nothing back."""
    return any(_negation(t) for t in words) and not any(t.pos_ == "VERB" for t in words)


def _negation(token: Token) -> bool:
    """A word that denies: the parse's negation, or one of the few words that are nothing else ("jk": "just
    kidding", the chat spelling of "not really")."""
    return token.dep_ == "neg" or token.norm_ in NEGATIONS


def _forms(token: Token) -> set[str]:
    text = token.text.casefold().replace("’", "'")
    return {text, token.lemma_.casefold(), text.removesuffix("'s")}


def _verdict(token: Token, value: list[Token], key: str | None, strict: bool) -> tuple[str | None, str]:
    clause = _clause(token)
    if _question(token):
        return "question", clause
    chain = _governing(token)
    negated = any(_negates(t) for t in chain if t.pos_ in ("VERB", "AUX") or t == token or t in value)
    if negated and not (key in BY_NAME and BY_NAME[key].negated):
        return "negation", clause
    if key not in PLAN_KEYS and any(_irrealis(t) for t in chain):
        return "hypothetical", clause
    if key not in PLAN_KEYS and any(_was(t) for t in chain[:3]):
        return "past", clause
    if key not in PLAN_KEYS and any(t.tag_ == "VBD" and t.dep_ == "ccomp" and t.head.tag_ in ("VBP", "VBZ")
                                    for t in chain):
        return "hypothetical", clause  # a past under a present: "I wish I had a garden"
    verb = next((t for t in chain if t.pos_ in ("VERB", "AUX")), None)
    if strict and key not in PLAN_KEYS and not (key in BY_NAME and BY_NAME[key].past) and \
            verb is not None and verb.tag_ == "VBD":
        return "past", clause  # the floor cannot tell "we got a cat" from "we lost our cat": it takes neither
    if key not in PLAN_KEYS and any(_planned(t) for t in chain if t.pos_ in ("VERB", "AUX")):
        return "plan", clause
    if key in BY_NAME and BY_NAME[key].past and verb is not None and _progressive(verb):
        return "plan", clause  # "I'm moving to Leeds": a move under way is not where they live
    return _whose(token, chain, key), clause


def _governing(token: Token) -> list[Token]:
    """The token and the words it hangs from within its clause: up to the verb it hangs from, through the verbs
    that verb completes ("don't want to be a nurse", "used to work as a chef"), and not past the subject of a
    clause ("my cat Miso knocked my coffee over" says nothing past or denied of having the cat) nor into the
    clause another is joined to ("haven't talked in days, wanted to say I joined a club")."""
    chain = [token]
    for head in token.ancestors:
        last = chain[-1]
        if last.dep_ in SUBJECTS:
            if _irrealis(head):  # "if my cat Miso could talk": the subject of a wish is wished for too
                chain.append(head)
            break
        if last.pos_ in ("VERB", "AUX") and last.dep_ not in ("xcomp", "aux", "auxpass", "acomp"):
            break
        chain.append(head)
    return chain


def _question(token: Token) -> bool:
    """Whether the part of the sentence holding the token asks: it ends with "?" (a dash, colon or semicolon
    before the "?" ends the statement first: "got married last week - how about you?"), starts with a wh-word,
    or puts its verb before its subject ("are you a nurse")."""
    sentence = token.sent
    words = [t for t in sentence if not t.is_punct and not t.is_space]
    if sentence.text.rstrip().endswith("?"):
        breaks = [t for t in sentence if t.i > token.i and t.text in ("-", "–", "—", ";", ":")]
        if not breaks:
            return True
    if not words:
        return False
    if words[0].tag_ in ("WDT", "WP", "WP$", "WRB") and words[0].dep_ != "nsubj" or words[0].tag_ == "WRB":
        return not sentence.text.rstrip().endswith((".", "!"))
    root = sentence.root
    subject = subject_of(root)
    inverted = [c for c in (root, *root.children) if c.dep_ in ("aux", "ROOT") and c.pos_ == "AUX"]
    return subject is not None and any(a.i < subject.i for a in inverted) and words[0].pos_ == "AUX"


def _negates(token: Token) -> bool:
    return any(c.dep_ == "neg" or c.dep_ == "det" and c.lower_ == "no" for c in token.children)


def _irrealis(token: Token) -> bool:
    """A modal on a verb, a condition ("if"), or the infinitive a verb takes as its complement ("want to be a
    nurse", "used to work as a chef"); an infinitive of purpose or after an adjective ("lucky to have my
    husband", "made this to show my path") asserts what it says, and so does what one knows or learns how to
    do ("learning how to play the piano": the learning is what may be wished, and the chain reads it)."""
    return any(c.tag_ == "MD" for c in token.children) or \
        token.dep_ == "xcomp" and token.head.pos_ == "VERB" and any(c.tag_ == "TO" for c in token.children) and \
        not any(c.tag_ in ("WRB", "WP") for c in token.children) or \
        any(c.dep_ == "mark" and c.lower_ in ("if", "unless") for c in token.children)


def _was(token: Token) -> bool:
    return token.lemma_ == "be" and token.tag_ == "VBD" or any(
        c.lemma_ == "be" and c.tag_ == "VBD" and c.dep_ in ("aux", "auxpass", "cop") for c in token.children)


def _planned(verb: Token) -> bool:
    """A present progressive with a date ("moving to Leeds in September", "I'm starting on Monday"): what
    is arranged for a time, not what holds now."""
    present = all(c.lemma_ != "be" or c.tag_ in ("VBP", "VBZ") for c in verb.children if c.dep_ == "aux")
    dated = any(t.ent_type_ == "DATE" for t in verb.subtree)
    progressive = verb.dep_ == "ROOT" or any(c.lemma_ == "be" for c in verb.children if c.dep_ == "aux")
    return verb.tag_ == "VBG" and progressive and present and dated and \
        not any(c.tag_ == "VBN" for c in verb.children)


def _progressive(verb: Token) -> bool:
    return verb.tag_ == "VBG" and not any(c.tag_ == "VBN" for c in verb.children)


def subject_of(verb: Token) -> Token | None:
    """The verb's subject: of two the parse gives ("Hi Maria, since we chatted, I'm volunteering"), the one
    nearest before the verb; the other is a name the speaker addresses, parsed as a subject."""
    subjects = [c for c in verb.children if c.dep_ in SUBJECTS]
    before = [c for c in subjects if c.i < verb.i]
    return before[-1] if before else next(iter(subjects), None)


def first_person(token: Token) -> bool:
    """"I", "we", "me", "my": the speaker, by the parse's person or by the word."""
    return token.pos_ == "PRON" and "1" in token.morph.get("Person", []) or token.lower_ in ("i", "we", "me")


def _whose(token: Token, chain: list[Token], key: str | None) -> str | None:
    """``None`` when the value is the speaker's; else "someone_else".

    The subject of the value's own clause decides: the speaker ("I", "we"), none (people drop it), a
    demonstrative ("This is Max"), the speaker's own key ("my name is Tom"), or a subject holding the value that
    the speaker owns ("my dog Rex") or that the clause says of the speaker ("Harry Potter is my favorite book",
    "cooking is therapy for me"). And a clause that is what someone else said ("Anna wrote: I live in Leeds",
    "my friend goes, i'm a nurse": the complement of a verb with another subject, after it) is theirs."""
    above = [token, *token.ancestors]
    for head in above:
        subject = subject_of(head)
        if subject is not None and head.lemma_ != "be" and not first_person(subject) and \
                not _listener(subject, head) and any(
                t.dep_ in ("ccomp", "parataxis") and t.head == head and head.i < t.i for t in above):
            return "someone_else"  # the words come after whoever said them
    if token.dep_ in ("appos", "compound") and owned(token.head):
        return None  # "my home country, Sweden", "my cat Miso": named as the speaker's own
    if len(chain) > 1 and chain[-2].dep_ in LOOSE or len(chain) == 1 and token.dep_ in LOOSE:
        return None  # "Sam here, new phone": a word the clause does not take as its argument is said by no one else
    clause = chain[-1] if chain[-1].pos_ in ("VERB", "AUX") else next(
        (t for t in token.ancestors if t.pos_ in ("VERB", "AUX")), chain[-1])
    subject = subject_of(clause)
    if subject is None or first_person(subject) or subject.morph.get("PronType", []) == ["Dem"]:
        return None
    if SPELLING.get(subject.lemma_.casefold()) == key and owned(subject):
        return None  # "my name is Tom": the speaker's own name, said as one
    if token in subject.subtree:
        held = any(owned(t) for t in subject.subtree)
        said_of_me = any(first_person(t) for t in clause.subtree if t not in subject.subtree)
        return None if held or said_of_me else "someone_else"
    return "someone_else"


def _listener(subject: Token, verb: Token) -> bool:
    """"(I wanted to let) you know I joined a club": what the speaker tells the listener, in the present, is the
    speaker's own; "you said I was a nurse" is not."""
    return "2" in subject.morph.get("Person", []) and verb.tag_ in ("VB", "VBP")


def _owned_phrase(value: list[Token]) -> tuple[str, str]:
    """("my cat", "cat") for the value "cat Miso" said as the speaker's: what its key is, whatever the clause
    is about ("I live in Berlin with my cat Miso"). The name is left out: it says nothing of the key, and it
    pulls a phrase towards every key of people ("my sister Jess" is as near children as family)."""
    owners = [c for t in value for c in t.children if c.dep_ == "poss" and first_person(c)]
    if not owners:
        return "", ""
    nouns = [t for t in value if t.pos_ != "PROPN"]
    if not nouns or len(nouns) == len(value):  # a name alone, or no name: the phrase as said
        return " ".join(t.text for t in sorted({*value, *owners}, key=lambda t: t.i)), ""
    return " ".join(t.text for t in sorted({*nouns, *owners}, key=lambda t: t.i)), " ".join(t.text for t in nouns)


def owned(noun: Token) -> bool:
    """"my cat", "our flat": a noun the speaker owns."""
    return any(c.dep_ == "poss" and first_person(c) for c in noun.children)


def _clause(token: Token) -> str:
    """The clause a value token was said in: the subtree of the verb it hangs from, without the other clauses
    joined to it ("I'm a nurse and I live in Leeds" -> "I'm a nurse")."""
    head = next((t for t in (token, *token.ancestors) if t.pos_ in ("VERB", "AUX") or t.dep_ == "ROOT"), token)
    others = {t.i for c in head.children if c.dep_ in ("conj", "parataxis", "advcl", "ccomp") and token not in
              c.subtree for t in c.subtree}
    kept = [t for t in head.subtree if t.i not in others and t.dep_ != "cc"]
    return "".join(t.text_with_ws for t in kept).strip() or token.sent.text

