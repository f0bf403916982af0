"""``Companion``: one chat turn, end to end.

Store the user's message (embedded: the same vector then serves as the recall
query), gather and assemble the context, stream the reply, store it with the
trace of the memories its context used, and embed the reply in the background
so the stream ends without waiting for it. If the client goes away mid-stream,
generation stops and what was said is still stored; if the model is down, the
user's message is stored and the error is reported in the stream.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from .authors import imported_author
from .config import CompanionSettings
from .errors import BadRequest, Conflict, LyraError
from .llm.base import ChatModel, GenerationOptions, Message, Vectors
from .memory import Memory
from .memory.context import Context, assemble
from .memory.gather import gather
from .memory.stage_words import LAYER_WORDS, found_by
from .store import Exchange
from .store.branches import TurnNotFound
from .store.exchanges import NewExchange, embedded_text
from .store.recall_index import RecallIndex
from .store.records import Ending
from .turn_events import Delta, Done, Notice, Stored, TurnError, TurnEvent

log = logging.getLogger(__name__)

# What the model is asked after the reply so far, to go on with it (``continue_reply``).
CONTINUE_PROMPT = ("Your last reply was cut off. Continue it from exactly where it stopped, without repeating "
                   "anything and without any preamble.")


def reply_ending(finish: str, *, stopped: bool, failed: bool) -> Ending | None:
    """How a reply ended, as stored with it: stopped by the person, cut short by an error, cut at the token
    limit (``finish_reason`` "length"); ``None`` for a reply that ended by itself."""
    if stopped:
        return "stopped"
    if failed:
        return "error"
    return "length" if finish == "length" else None


def joiner(so_far: str, more: str) -> str:
    """What goes between a cut reply and its continuation: a space where the cut fell after a word or a
    sentence and the model starts a new one; nothing where either side already has the space or the
    continuation starts with punctuation. (A cut inside a word reads as two words: the model's continuation
    does not say whether it meant to finish one.)"""
    if not so_far or not more or so_far[-1].isspace() or more[0].isspace() or not more[0].isalnum():
        return ""
    return " "


def continuation(messages: list[Message], so_far: str) -> list[Message]:
    """The prompt for the rest of a cut reply: the turn's prompt, the reply so far, the request to go on."""
    return [*messages, {"role": "assistant", "content": so_far}, {"role": "user", "content": CONTINUE_PROMPT}]


@dataclass(frozen=True)
class _Answering:
    """The message a reply answers: its conversation (and whether that is remembered), its words, its stored
    id, and its vector (the recall query; None when the embedder failed)."""

    session_id: int
    message: str
    user_id: int
    vector: Vectors | None
    remember: bool


class Companion:
    def __init__(self, memory: Memory, chat: ChatModel, settings: CompanionSettings) -> None:
        self.memory = memory
        self.chat = chat
        self.settings = settings
        self.last_turn_at: float | None = None  # monotonic; the dream cycle waits for a quiet spell
        # One worker: replies are embedded in order, off the streaming path.
        self._embedder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed-reply")
        # Persona, world state and profile are counted every turn; their counts do not change.
        self.count_tokens = functools.lru_cache(maxsize=8192)(chat.count_tokens)

    def turn(self, session_id: int, message: str, options: GenerationOptions | None = None, *,
             replacing: int | None = None) -> Generator[TurnEvent, None, None]:
        """Stream one turn; closing the iterator stops generation and stores the partial reply.

        ``replacing``: the id of one of the person's messages this one is an edit of; it and what followed it are
        set aside as a branch (``store/branches.py``) and the conversation goes on from the new message.
        """
        store = self.memory.store
        session = store.sessions.get(session_id)
        self.last_turn_at = time.monotonic()
        edited = self._editable(session_id, replacing) if replacing is not None else None
        user, vector = self._store_user_message(session_id, message, session.remember, edited)
        yield Stored(user.id)
        yield from self._reply(_Answering(session_id, message, user.id, vector, session.remember), options)

    def regenerate(self, reply_id: int, options: GenerationOptions | None = None
                   ) -> Generator[TurnEvent, None, None]:
        """Stream a new reply to the message ``reply_id`` answered; the old one stays as an alternative
        (``store/branches.py``). Nothing changes unless the new reply is stored."""
        store = self.memory.store
        reply, user = self._answered(reply_id, "regenerated")
        session = store.sessions.get(reply.session_id)
        self.last_turn_at = time.monotonic()
        vector = self._embed_query(user.content)
        yield Stored(user.id, replacing=reply_id)
        yield from self._reply(_Answering(session.id, user.content, user.id, vector, session.remember), options,
                               replacing=reply_id)

    def continue_reply(self, reply_id: int, options: GenerationOptions | None = None
                       ) -> Generator[TurnEvent, None, None]:
        """Stream the rest of a reply that was cut short (the token limit, Stop, an error): the model is shown the
        reply so far and asked to go on from where it ended. The reply the person sees grows: its text so far and
        what follows are stored as a new version of it (``store/branches.py``), so the cut one stays one page back
        (‹ 1/2 ›) and nothing changes unless the continuation is stored. The deltas are the new text only. A reply
        imported from another assistant, or one that ended by itself, is refused."""
        store = self.memory.store
        reply, user = self._answered(reply_id, "continued")
        session = store.sessions.get(reply.session_id)
        if imported_author(reply) is not None:
            raise BadRequest(f"reply {reply_id} was written by {imported_author(reply)}",
                             hint="only the companion's own replies can be continued")
        if reply.ending is None:
            raise Conflict(f"reply {reply_id} ended by itself: it was not cut short, so there is nothing to continue",
                           hint="only a reply cut at the length limit, stopped or broken off can be continued")
        self.last_turn_at = time.monotonic()
        vector = self._embed_query(user.content)
        yield Stored(user.id, replacing=reply_id, continuing=reply_id)
        yield from self._reply(_Answering(session.id, user.content, user.id, vector, session.remember), options,
                               replacing=reply_id, so_far=reply.content)

    def _answered(self, reply_id: int, what: str) -> tuple[Exchange, Exchange]:
        """A reply of this companion's on a conversation's path, and the person's message it answers."""
        store = self.memory.store
        reply = store.exchanges.get(reply_id)
        if reply is None:
            raise TurnNotFound(f"no reply {reply_id} on a conversation's current path",
                               hint="choose that version first, or reload the conversation")
        if reply.role != "assistant":
            raise BadRequest(f"{reply_id} is not a reply", hint=f"only the companion's replies can be {what}")
        before = store.exchanges.history(reply.session_id, limit=1, before_id=reply_id)
        if not before or before[0].role != "user":
            raise BadRequest(f"reply {reply_id} answers no message of the person", hint="nothing to answer again")
        return reply, before[0]

    def _reply(self, asked: _Answering, options: GenerationOptions | None, *, replacing: int | None = None,
               so_far: str | None = None) -> Generator[TurnEvent, None, None]:
        """Stream a reply to the message ``asked`` and store it with how it ended; ``so_far``: the start of a reply
        that was cut short, for the model to go on from (``continue_reply``)."""
        reply_budget = (options.max_tokens if options and options.max_tokens else None) or self._reply_tokens()
        # A continuation's prompt also holds the reply so far and the request to go on.
        shown = 0 if so_far is None else self._count(so_far + CONTINUE_PROMPT) or 0
        try:
            context = self.build_context(asked.session_id, asked.message, asked.user_id, asked.vector,
                                         reply_budget + shown)
        except LyraError as exc:
            yield TurnError(str(exc), exc.status_code)
            return
        if context.message_truncated:
            yield Notice("Your message was too long for the model's context; it was cut for the "
                         "model, and stored whole.")
        messages = context.messages if so_far is None else continuation(context.messages, so_far)
        parts: list[str] = []
        finish = "stop"
        error: LyraError | None = None
        stopped = False
        stream = self.chat.stream(messages, options)
        try:
            for delta in stream:
                if delta.text:
                    text = delta.text if parts or so_far is None else joiner(so_far, delta.text) + delta.text
                    parts.append(text)
                    yield Delta(text)
                finish = delta.finish_reason or finish
        except LyraError as exc:
            error = exc
        except GeneratorExit:  # our consumer went away: the person stopped the reply
            stopped = True
            raise
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()  # stops generation when our consumer went away
            ending = reply_ending(finish, stopped=stopped, failed=error is not None)
            text = "".join(parts)
            try:
                reply = self._store_reply(asked, (so_far or "") + text if text else "", context, replacing, ending)
            except LyraError as exc:  # the conversation changed while the reply was written
                reply, error = None, exc
        if error is not None:
            yield TurnError(str(error), error.status_code)
        yield Done(reply.id if reply else None, finish, ending if reply else None, context.tokens)

    def build_context(self, session_id: int, message: str, user_exchange_id: int | None,
                      vector: Vectors | None, reply_tokens: int) -> Context:
        """The prompt for ``message``; turns from ``user_exchange_id`` on are not history yet."""
        inputs = gather(self.memory, self.settings, session_id, message,
                        None if vector is None else vector[0], before_id=user_exchange_id)
        return assemble(inputs, count=self.count_tokens, n_ctx=self.chat.n_ctx, reply_tokens=reply_tokens)

    def choose(self, turn_id: int) -> int:
        """Make a version of a turn current (``store/branches.py``); returns its session. The turns that come
        back onto the path bring their vectors back; one that has none of the embedding model in use (switched
        meanwhile) is embedded now (the catch-up would do it later), unless off the record."""
        store = self.memory.store
        session_id, _ = store.branches.session_of(turn_id)
        back = store.branches.choose(turn_id)
        model = self.memory.embedder.name
        lacking = set(back) - set(RecallIndex(store).vectors("exchange", model, back))
        if lacking and store.sessions.get(session_id).remember:
            turns = list(store.exchanges.get_many(sorted(lacking)).values())
            try:
                vectors = self.memory.embedder.embed([embedded_text(t.content, t.caption) for t in turns])
                for turn, vector in zip(turns, vectors, strict=True):
                    store.exchanges.set_vector(turn.id, vector, self.memory.embedder.name)
            except Exception as exc:  # the re-embed catch-up adds them later
                log.warning("could not embed the chosen turns now: %s", exc, exc_info=not isinstance(exc, LyraError))
        return session_id

    def trace(self, exchange_id: int) -> dict[str, Any] | None:
        """Why a reply says what it says: the memories its context used (``kind`` "context"), each dated by the
        days it speaks of and with how it was found in words; or, for a reply imported from another assistant
        (``kind`` "imported"), who wrote it and when: it had none of this companion's context. ``None``: a turn
        that is no reply, or a reply with no trace kept."""
        store = self.memory.store
        found = store.exchanges.trace(exchange_id)
        if found is not None:
            for entry in found["memories"]:
                entry.update(layer_words=LAYER_WORDS.get(entry["layer"], entry["layer"]),
                             found_by=found_by(entry.get("stage") or ""))
            return {"kind": "context", **found}
        turn = store.exchanges.get(exchange_id)
        source = None if turn is None else imported_author(turn)
        if turn is None or source is None:
            return None
        return {"kind": "imported", "exchange_id": exchange_id, "imported_from": source,
                "written_at": turn.created_at, "context_tokens": None, "memories": []}

    def wait_for_embeddings(self) -> None:
        """Block until every reply submitted so far is embedded (tests, benchmarks, shutdown)."""
        self._embedder.submit(lambda: None).result()

    def close(self) -> None:
        self._embedder.shutdown(wait=True)

    # -- internals ------------------------------------------------------------------

    def _reply_tokens(self) -> int:
        spec_sampling = getattr(getattr(self.chat, "spec", None), "sampling", None)
        wanted = spec_sampling.max_tokens if spec_sampling else 512
        return min(wanted, self.chat.n_ctx // 4)

    def _editable(self, session_id: int, message_id: int) -> Exchange:
        """The person's message ``message_id`` of this conversation, which an edit replaces."""
        found = self.memory.store.exchanges.get(message_id)
        if found is None or found.session_id != session_id or found.role != "user":
            raise BadRequest(f"{message_id} is not one of your messages in this conversation",
                             hint="only a message of the conversation's current path can be edited")
        return found

    def _embed_query(self, message: str) -> Vectors | None:
        try:
            return self.memory.embedder.embed([message])
        except Exception as exc:  # any failure: stored without a vector; the re-embed catch-up adds it later
            log.warning("could not embed the message now: %s", exc, exc_info=not isinstance(exc, LyraError))
            return None

    def _store_user_message(self, session_id: int, message: str, remember: bool,
                            replacing: Exchange | None) -> tuple[Exchange, Vectors | None]:
        """Stored with its vector, which is also the recall query; off the record the vector is only the query.
        An edit of a message that carried a photo keeps the photo: its caption goes with the new words, and the
        stored vector is of both (the query stays the words)."""
        vector = self._embed_query(message)
        caption = replacing.caption if replacing else None
        new = NewExchange(session_id, "user", message, tokens=self._count(message), caption=caption)
        stored = vector
        if caption is not None and vector is not None and remember:
            stored = self._embed_query(new.embedded)
        exchange = self.memory.store.exchanges.add(
            new, vector=None if stored is None or not remember else stored[0], model=self.memory.embedder.name,
            replacing=replacing.id if replacing else None)
        return exchange, vector

    def _store_reply(self, asked: _Answering, text: str, context: Context, replacing: int | None,
                     ending: Ending | None) -> Exchange | None:
        if not text:
            return None
        reply = self.memory.store.exchanges.add_reply(asked.session_id, text, [asdict(t) for t in context.trace],
                                                      context.tokens, answering=asked.user_id, replacing=replacing,
                                                      ending=ending)
        if asked.remember:
            self._embedder.submit(self._embed_reply, reply)
        return reply

    def _embed_reply(self, reply: Exchange) -> None:
        try:
            vector = self.memory.embedder.embed([reply.content])[0]
            self.memory.store.exchanges.set_vector(reply.id, vector, self.memory.embedder.name)
        except Exception as exc:  # never lose the worker; the re-embed catch-up retries it
            log.warning("embedding reply %d failed: %s", reply.id, exc)

    def _count(self, text: str) -> int | None:
        try:
            return self.chat.count_tokens(text)
        except Exception as exc:  # the count is optional; the message must be stored whatever it holds
            log.warning("could not count the message's tokens: %s", exc)
            return None
