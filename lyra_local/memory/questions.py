"""Which of the profile's keys a question asks about, by meaning: the bridge from a question to the statements
that answer it.

"What is my job?" and "I teach chemistry at a secondary school in Leeds" share no word, and their vectors are
far apart (a question is nearest other questions, and the companion's "my job is to help you"). Each key of the
profile (``keys.py``) is described by how a person asks about it (``asks``) and by what a person says of it in
general words (``says``): a question close to a key's asks is answered by the person's turns close to that
key's says. Recall's ``statement`` stage (``stages.Statements``) searches with those statements' vectors.

The keys' sentences are embedded once per embedding model, the first time a question needs them. This module
never reads English with rules (no cue words, no patterns): the embedding model decides.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .keys import KEYS, Key

Vectors = npt.NDArray[np.float32]
Embed = Callable[[Sequence[str]], Vectors]


@dataclass(frozen=True)
class Asked:
    """A key a question asks about: how close the question is to the key's nearest ask, and the vectors of the
    key's statements (unit rows), to search the person's turns with."""

    key: str
    closeness: float
    says: Vectors

    def stated(self, vectors: Vectors) -> npt.NDArray[np.float32]:
        """How close each row of ``vectors`` (a turn's) is to what a person says of this key: its best cosine."""
        if not len(vectors):
            return np.zeros(0, dtype=np.float32)
        return np.asarray((vectors @ self.says.T).max(axis=1), dtype=np.float32)


class KeyVectors:
    """The keys' asks and says, embedded by one embedding model, once (safe to share between threads)."""

    def __init__(self, embed: Embed, keys: Sequence[Key] = KEYS) -> None:
        self._embed = embed
        self._keys = tuple(keys)
        self._lock = threading.Lock()
        self._asks: Vectors | None = None
        self._asker: list[str] = []  # the key of each row of _asks
        self._says: dict[str, Vectors] = {}

    def asked(self, question: Vectors, least: float) -> Asked | None:
        """The key ``question`` (its unit vector) is nearest by its asks, when at least ``least`` close."""
        asks, says = self._vectors()
        sims = asks @ unit(np.asarray(question, dtype=np.float32).reshape(1, -1))[0]
        best = int(np.argmax(sims))
        if float(sims[best]) < least:
            return None
        key = self._asker[best]
        return Asked(key, float(sims[best]), says[key])

    def _vectors(self) -> tuple[Vectors, dict[str, Vectors]]:
        with self._lock:
            if self._asks is None:
                asks = [(key.name, text) for key in self._keys for text in key.asks]
                says = [(key.name, text) for key in self._keys for text in key.says]
                vectors = unit(self._embed([text for _, text in asks + says]))
                self._asker = [name for name, _ in asks]
                by_key = [name for name, _ in says]
                self._says = {key.name: vectors[len(asks):][[i for i, n in enumerate(by_key) if n == key.name]]
                              for key in self._keys}
                self._asks = vectors[:len(asks)]
            return self._asks, self._says


def unit(matrix: Vectors) -> Vectors:
    """Rows scaled to length 1 (a zero row stays zero)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    return np.asarray(matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12), dtype=np.float32)
