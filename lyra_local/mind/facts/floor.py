"""Facts proposed without a model: the phrases a dependency parse shows the person saying of themselves.

With a summary model too small to extract facts, the profile still learns the
plainest self-statements. The parse (spaCy's small English pipeline) gives
candidates by their grammar alone, never by a list of jobs, pets or places:

- a name: a proper noun standing alone ("Sam here"), or what "I'm" or "my
  name is" names;
- what the person is: the noun after a first-person "I'm" ("I'm a nurse");
- what the person has: a noun they own with its proper name ("my dog Rex"),
- where: a place (a named entity) in a first-person clause ("I live in Leeds");
- a habit: what a first-person present does with a time that recurs ("I go
  swimming every morning", "I sing in a choir on tuesdays").

Anything else a person does ("I teach chemistry") is left to a model: a
predicate's meaning cannot be told from its grammar ("I work as a team" is no
job, "I live in hell" no home), and the floor is measured to keep nothing false
on the project's negatives (tests/data/floor_statements.toml).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from .gate import Proposal, Turn, said
from .statement import SUBJECTS, Parse, content_words, first_person, owned, subject_of

if TYPE_CHECKING:
    from spacy.tokens import Span, Token

MOST_WORDS = 6  # a name or a noun phrase longer than this is a story, not a fact
PLACES = ("GPE", "LOC", "FAC")  # named-entity labels of places


def proposals(turns: Sequence[Turn], parse: Parse) -> list[Proposal]:
    """The candidates of the person's own turns, each quoting the sentence it was read in, with its kind."""
    out: list[Proposal] = []
    for turn in turns:
        if not turn.own:
            continue
        for sentence in parse(said(turn.text)).sents:
            if sentence.text.rstrip().endswith("?"):
                continue
            quote = sentence.text.strip()
            out.extend(Proposal("name" if kind == "name" else "", value, quote, kind)
                       for kind, value in dict.fromkeys(_values(sentence)) if content_words(value))
    return out


def _values(sentence: Span) -> Iterator[tuple[str, str]]:
    """(kind, value) candidates of one sentence (``Key.kinds``)."""
    root = sentence.root
    verbs = [t for t in sentence if t.pos_ in ("VERB", "AUX")]
    if root.pos_ == "PROPN" and not verbs:  # "Sam here", "Maya, 34, Leeds"
        yield "name", _phrase(root, proper=True)
    for token in sentence:
        named = _named(token)
        if named:
            yield "named", named
        head = _predicate_head(token)
        if head is None:
            continue
        if token.dep_ in ("attr", "acomp") and _being(head) and (
                token.ent_type_ == "PERSON" or token.pos_ == "PROPN" and _names_themselves(head)):
            yield "name", _phrase(token, proper=True)  # "I'm Sam", "my name is Tom"
        elif token.dep_ == "attr" and token.pos_ == "NOUN" and _being(head):  # "I'm a nurse"
            yield "thing", _phrase(token)
        elif token.ent_type_ in PLACES and token.ent_iob_ == "B":
            yield "place", _entity(token)
        elif token == head and token.pos_ == "VERB" and _habitual(token):
            activity = _activity(token)
            if activity:
                yield "doing", activity  # "I go swimming every morning", "I do yoga twice a week"
        elif token.pos_ == "PROPN" and token.dep_ == "pobj" and token.ent_type_ not in ("DATE", "TIME"):
            yield "place", _phrase(token, proper=True)  # "moved to Glasgow": the small pipeline's NER misses many


def _habitual(verb: Token) -> bool:
    """A present tense (or "been ...ing") with a time that recurs: "every morning", "on tuesdays", "twice a
    week": what the person does as a habit, by the grammar of frequency, whatever the activity is."""
    present = verb.tag_ in ("VBP", "VBZ") or verb.tag_ == "VBG" and any(
        c.norm_ == "been" for c in verb.children if c.dep_ == "aux")
    if not present:
        return False
    for entity in verb.doc.ents:
        if entity.label_ in ("DATE", "TIME") and entity.root.head == verb or any(
                t.head == verb or t.head.head == verb for t in entity):
            first = entity[0].lower_
            if first in ("every", "each", "a", "per") or any(t.tag_ == "NNS" for t in entity):
                return True
    return False


def _activity(verb: Token) -> str:
    """What a habit is: the verb's object ("go swimming", "do yoga", "play tennis"), else the verb with the
    place it is done in ("sing in a choir")."""
    objects = [c for c in verb.children if c.dep_ in ("dobj", "xcomp") and c.ent_type_ not in ("DATE", "TIME")]
    if objects:
        return _phrase(objects[0])
    place = next((c for c in verb.children if c.dep_ == "prep" and any(
        g.dep_ == "pobj" and not g.ent_type_ for g in c.children)), None)
    if place is None:
        return ""
    words = [verb, *sorted(place.subtree, key=lambda t: t.i)]
    return " ".join(t.text for t in words if t.dep_ != "det")[:60]


def _being(verb: Token) -> bool:
    return verb.lemma_ == "be" or verb.norm_ in ("am", "m", "'m", "is", "are", "'re", "'s")


def _names_themselves(verb: Token) -> bool:
    """"my name is Tom": a copula whose subject is the speaker's own name."""
    return any(c.dep_ in SUBJECTS and c.lemma_ == "name" and owned(c) for c in verb.children)


def _named(token: Token) -> str:
    """"dog Rex" where a noun the speaker owns stands by a proper name ("my cat Miso", "Luna, my kitten")."""
    if token.pos_ != "NOUN" or token.dep_ == "poss" or not owned(token):
        return ""  # "my sister's boyfriend" names the boyfriend, not the sister
    doc = token.doc
    for i in (token.i + 1, token.i + 2, token.i - 2, token.i - 3):
        between = range(min(i, token.i) + 1, max(i, token.i))
        if 0 <= i < len(doc) and doc[i].pos_ == "PROPN" and doc[i].text[:1].isupper() and \
                doc[i].sent == token.sent and all(doc[j].is_punct or doc[j].dep_ == "poss" for j in between):
            return f"{token.text} {doc[i].text}"
    return ""


def _predicate_head(token: Token) -> Token | None:
    """The verb a token's clause is said with, when that clause is the speaker's own (a first-person subject,
    or none); else ``None``."""
    for head in (token, *token.ancestors):
        if head.pos_ not in ("VERB", "AUX") and head.dep_ != "ROOT" or head.dep_ in ("acl", "relcl", "amod"):
            continue
        subject = subject_of(head)
        if subject is None and head.dep_ != "ROOT":
            continue  # "... and love hiking": the subject is the clause's it is joined to
        if subject is None or first_person(subject) or owned(subject) and token in subject.subtree:
            return head
        return head if _names_themselves(head) else None
    return None


def _phrase(token: Token, proper: bool = False) -> str:
    """A noun with its modifiers, without articles or possessives ("a huge fan of jazz" -> "huge fan of jazz")."""
    if proper:
        parts = [t for t in token.subtree if t.pos_ in ("PROPN", "ADJ") and t.ent_type_ == token.ent_type_
                 and abs(t.i - token.i) <= 2]
    else:
        parts = [t for t in token.subtree if t.dep_ not in ("det", "poss", "punct", "relcl", "acl")]
    words = [t.text for t in sorted(parts, key=lambda t: t.i)][:MOST_WORDS]
    return " ".join(words)


def _entity(token: Token) -> str:
    span = next(e for e in token.doc.ents if e.start == token.i)
    return span.text
