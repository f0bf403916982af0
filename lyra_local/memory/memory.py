"""``Memory``: remembering, recalling and forgetting, with the embedding model in the loop.

The store knows rows and vectors; this layer knows which embedding model is
active. Vectors of two models never mix: recall searches only the active
model's vectors. When the configured embedding model changes, ``reembed``
embeds everything with the new one and switches over when done; until then
recall is served by BM25 alone rather than by vectors of the wrong model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import timezone, tzinfo

import numpy as np
import numpy.typing as npt

from ..llm.base import Embedder, Reranker
from ..store import Exchange, Hit, Store
from ..store.exchanges import NewExchange
from ..store.forget.erase import Forgotten, forget, forget_exchanges, forget_sessions
from ..store.forget.plan import ForgetPlan
from .questions import KeyVectors
from .recall import Recall, RecallQuery
from .reembed import ReembedStatus, reembed
from .speakers import KnownNames
from .stages import Tuning

log = logging.getLogger(__name__)
ACTIVE_MODEL_KEY = "embed_model"
EMBED_BATCH = 64
Progress = Callable[[int, int], None]


class Memory:
    def __init__(self, store: Store, embedder: Embedder, *, zone: tzinfo = timezone.utc,
                 reranker: Reranker | None = None, household: Callable[[], str | None] | None = None,
                 known: KnownNames | None = None) -> None:
        """``household``: reads the household memory, the one thing every person's context shares (None: a
        memory of its own, as in tests and tools that open one store); ``known``: the names the person and the
        companion are given (recall knows them when asked). Recall's knobs are ``Tuning()`` (``retune``)."""
        self.store = store
        self.household = household or _nothing_shared
        self.embedder = embedder
        self.reranker = reranker  # the optional re-ranking model: recall's last stage (stages.Rerank)
        self.zone = zone  # the person's time zone: "yesterday", "in June" are read in it
        self.known = known or KnownNames()  # the person's and the companion's names, as given
        self._recall = Recall(store, None, zone=zone, known=self.known)
        self.keys = KeyVectors(embedder.embed)  # the profile keys' sentences, embedded when a question needs them
        self.reembedding = ReembedStatus()  # how the background re-embedding with this embedder went
        if store.get_meta(ACTIVE_MODEL_KEY) is None:
            store.set_meta(ACTIVE_MODEL_KEY, embedder.name)

    @property
    def active_model(self) -> str:
        return self.store.get_meta(ACTIVE_MODEL_KEY) or self.embedder.name

    @property
    def switching_model(self) -> bool:
        """True while vectors of the configured model are still being computed."""
        return self.active_model != self.embedder.name

    def remember(self, session_id: int, role: str, content: str, *, created_at: str | None = None,
                 tokens: int | None = None, caption: str | None = None) -> Exchange:
        """Embed and insert one exchange in one transaction; ``caption``: what a photo it carries shows (found
        with it, never shown as its sender's words)."""
        new = NewExchange(session_id, role, content, created_at, tokens, caption=caption)
        vector = self.embedder.embed([new.embedded])[0]
        return self.store.exchanges.add(new, vector=vector, model=self.embedder.name)

    def remember_many(self, items: Sequence[NewExchange], progress: Progress | None = None) -> list[Exchange]:
        """The bulk path: embeddings in batches, one transaction per batch."""
        out: list[Exchange] = []
        for start in range(0, len(items), EMBED_BATCH):
            batch = items[start:start + EMBED_BATCH]
            vectors = self.embedder.embed([item.embedded for item in batch])
            with self.store.write() as conn:
                out.extend(self.store.exchanges.insert(conn, batch, vectors, self.embedder.name))
            if progress:
                progress(len(out), len(items))
        return out

    def retune(self, tuning: Tuning) -> None:
        """Recall with other knobs from now on: measurements (``scripts/eval_recall.py``) try them beside the
        default on the same store."""
        self._recall = Recall(self.store, tuning, zone=self.zone, known=self.known)

    def recall(self, query: RecallQuery, *, vector: npt.NDArray[np.float32] | None = None) -> list[Hit]:
        """Hybrid recall; pass the query's ``vector`` if it was embedded already (a question naming someone is
        embedded again without the name: ``Recall.content_of``)."""
        dense = query.mode != "bm25" and not self.switching_model
        content = self._recall.content_of(query) if dense else None
        if content is not None:
            vector = self.embedder.embed([content])[0]
        elif dense and vector is None:
            vector = self.embedder.embed([query.text])[0]
        return self._recall.search(query, vector if dense else None, self.embedder.name if dense else None,
                                   self.reranker, self.keys if dense else None)

    def speakers_named(self, text: str) -> dict[str, str]:
        """The words of a question naming a speaker of this memory, to the speaker's key (``speakers.py``)."""
        return self._recall.speakers_named(text)

    def forget_session(self, session_id: int) -> Forgotten:
        self.store.sessions.get(session_id)  # a clear error if it does not exist
        self._recall.forgot()
        return forget_sessions(self.store, [session_id])

    def forget_exchanges(self, exchange_ids: list[int]) -> Forgotten:
        self._recall.forgot()
        return forget_exchanges(self.store, exchange_ids)

    def forget_plan(self, plan: ForgetPlan) -> Forgotten:
        self._recall.forgot()
        return forget(self.store, plan)

    def reembed(self, progress: Progress | None = None, stop: Callable[[], bool] | None = None) -> int:
        """Embed every turn, gist and digest lacking a vector of the configured model; switch when complete."""
        return reembed(self, progress, stop)

    def switch_to(self, model: str) -> None:
        """Recall uses ``model``'s vectors from now on (every tier has them: see ``reembed``)."""
        self.store.set_meta(ACTIVE_MODEL_KEY, model)


def _nothing_shared() -> str | None:
    return None
