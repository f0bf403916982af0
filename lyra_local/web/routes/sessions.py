"""``/api/sessions`` and ``/api/exchanges``: conversations and their turns for the web UI: list, create,
rename, forget, history, a streamed turn, a conversation's gist (read, edited, deleted), the trace;
regenerating a reply, editing a message, and choosing among the versions of a turn."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field, field_validator
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from ...authors import imported_author, imported_from
from ...store import Store
from ...store.branches import TurnNotFound
from ...store.sessions import SessionNotFound
from ...textsafe import well_formed
from ...turn_events import Done, Stored, TurnError, TurnEvent
from ..deps import AsPerson
from ..failures import describe_failure
from ..params import Limit, Offset, RowId, TextEdit
from ..streaming import stream_in_thread

router = APIRouter(prefix="/api")


def _storable(value: object) -> object:
    """A lone surrogate (a client's cut through an emoji) as U+FFFD, so the text can be stored."""
    return well_formed(value) if isinstance(value, str) else value


class NewSession(BaseModel):
    # The UI names a conversation after the start of its first message: a name cut through an emoji
    # must not refuse the conversation (and lose the message).
    name: str = Field("New chat", max_length=200)
    remember: bool = True  # False: off the record
    _name_storable = field_validator("name", mode="before")(_storable)


class Rename(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    _name_storable = field_validator("name", mode="before")(_storable)


class ChatRequest(BaseModel):
    message: str = Field(min_length=1, max_length=200_000)
    _message_storable = field_validator("message", mode="before")(_storable)


class EditRequest(BaseModel):
    content: str = Field(min_length=1, max_length=200_000)
    _content_storable = field_validator("content", mode="before")(_storable)


@router.get("/sessions")
async def list_sessions(you: AsPerson, limit: Limit = 100, offset: Offset = 0) -> dict[str, Any]:
    store = you.store
    sessions = await run_in_threadpool(store.sessions.list, limit=limit, offset=offset)
    return {"sessions": [dataclasses.asdict(s) for s in sessions]}


@router.post("/sessions", status_code=201)
async def create_session(body: NewSession, you: AsPerson) -> dict[str, Any]:
    session = await run_in_threadpool(lambda: you.store.sessions.create(body.name,
                                                                                         remember=body.remember))
    return dataclasses.asdict(session)


@router.patch("/sessions/{session_id}")
async def rename_session(session_id: RowId, body: Rename, you: AsPerson) -> dict[str, Any]:
    session = await run_in_threadpool(you.store.sessions.rename, session_id, body.name)
    return dataclasses.asdict(session)


@router.delete("/sessions/{session_id}")
async def forget_session(session_id: RowId, you: AsPerson) -> dict[str, Any]:
    """Deleting a session forgets it: rows, vectors, full text; summaries are rebuilt without it."""
    forgotten = await run_in_threadpool(you.memory.forget_session, session_id)
    return {"forgotten": dataclasses.asdict(forgotten)}


def messages_of(store: Store, session_id: int, limit: int | None = None) -> dict[str, Any]:
    """The current path, each turn with how many versions it has (``alternatives``), which one it is
    (``chosen``, from 1) and their ids in order (``versions``), for paging ‹ 2/3 ›; ``imported_from``: the
    assistant that wrote an imported reply ("ChatGPT"), named above it instead of the companion; ``ending``:
    how a reply that did not end by itself ended (the page marks it)."""
    source = imported_from(store.sessions.get(session_id).source)
    versions = store.branches.versions(session_id)
    out = []
    for m in store.exchanges.history(session_id, limit=limit):
        found = versions.get(m.id)
        # Who wrote a reply is stored with it: one Lyra wrote in an imported conversation is Lyra's.
        out.append({**dataclasses.asdict(m), "alternatives": found.count if found else 1,
                    "chosen": found.chosen if found else 1, "versions": list(found.ids) if found else [m.id],
                    "imported_from": imported_author(m)})
    return {"session_id": session_id, "imported_from": source, "messages": out}


@router.get("/sessions/{session_id}/messages")
async def history(session_id: RowId, you: AsPerson, limit: Limit | None = None) -> dict[str, Any]:
    return await run_in_threadpool(messages_of, you.store, session_id, limit)


@router.get("/sessions/{session_id}/gist")
async def session_gist(session_id: RowId, you: AsPerson) -> dict[str, Any]:
    store = you.store
    await run_in_threadpool(store.sessions.get, session_id)  # 404 for an unknown session
    gist = await run_in_threadpool(store.derived.gist, session_id)
    return {"gist": None if gist is None else dataclasses.asdict(gist)}


@router.put("/sessions/{session_id}/gist")
def edit_gist(session_id: RowId, body: TextEdit, you: AsPerson) -> dict[str, Any]:
    """The person's own gist of the conversation: the dream never overwrites it."""
    you.store.sessions.get(session_id)  # 404 for an unknown session
    vector = you.memory.embedder.embed([body.content])[0]
    gist = you.store.corrections.edit_gist(session_id, body.content.strip(), vector, you.memory.embedder.name)
    return {"gist": dataclasses.asdict(gist)}


@router.delete("/sessions/{session_id}/gist")
def delete_gist(session_id: RowId, you: AsPerson) -> dict[str, Any]:
    return {"deleted": you.store.corrections.delete_gist(session_id)}


def streamed(make_stream: Callable[[], Iterator[TurnEvent]], what: str) -> EventSourceResponse:
    """A turn as server-sent events: stored, delta..., (notice), (error), done. Whatever fails, the stream ends
    with an error event and done, and says whether the message was kept."""

    async def events() -> AsyncIterator[dict[str, str]]:
        stored = ended = False
        try:
            async for event in stream_in_thread(make_stream):
                assert isinstance(event, TurnEvent)
                stored = stored or isinstance(event, Stored)
                ended = isinstance(event, Done)
                yield {"event": event.type, "data": json.dumps(event.payload())}
        except Exception as exc:
            text, status = describe_failure(exc, what)
            kept = "your message is saved" if stored else "your message was not saved: send it again"
            failed = TurnError(f"{text} ({kept})", status)
            yield {"event": failed.type, "data": json.dumps(failed.payload())}
        if not ended:
            done = Done(None, "error")
            yield {"event": done.type, "data": json.dumps(done.payload())}

    return EventSourceResponse(events(), ping=15)


@router.post("/sessions/{session_id}/chat")
async def chat(session_id: RowId, body: ChatRequest, you: AsPerson) -> EventSourceResponse:
    """One turn, streamed as server-sent events: stored, delta..., (notice), (error), done."""
    await run_in_threadpool(you.store.sessions.get, session_id)  # 404 before the stream starts
    companion = you.companion
    return streamed(lambda: companion.turn(session_id, body.message), f"a turn in session {session_id}")


async def checked(make_stream: Callable[[], Iterator[TurnEvent]]) -> Callable[[], Iterator[TurnEvent]]:
    """The stream with its first event taken now, so what it checks first (the turn it names) fails as a JSON
    400/404/409 before the event stream starts; then the whole stream, for ``streamed``."""
    stream = await run_in_threadpool(make_stream)
    first = await run_in_threadpool(next, stream)

    def events() -> Iterator[TurnEvent]:
        yield first
        yield from stream

    return events


@router.post("/exchanges/{exchange_id}/regenerate")
async def regenerate(exchange_id: RowId, you: AsPerson) -> EventSourceResponse:
    """A new reply in place of this one, streamed like a turn; the old one stays as an alternative."""
    companion = you.companion
    return streamed(await checked(lambda: companion.regenerate(exchange_id)), f"regenerating reply {exchange_id}")


@router.post("/exchanges/{exchange_id}/continue")
async def continue_reply(exchange_id: RowId, you: AsPerson) -> EventSourceResponse:
    """The rest of a reply that was cut short, streamed like a turn (the new text only); stored as the reply so
    far and its rest, a new version in its place: the cut one stays as an alternative."""
    companion = you.companion
    return streamed(await checked(lambda: companion.continue_reply(exchange_id)), f"continuing reply {exchange_id}")


@router.post("/exchanges/{exchange_id}/edit")
async def edit(exchange_id: RowId, body: EditRequest, you: AsPerson) -> EventSourceResponse:
    """The person's message, edited: the conversation goes on from it with a new reply, streamed like a turn;
    the old message and what followed it are kept as a branch."""
    turn = await run_in_threadpool(you.store.exchanges.get, exchange_id)
    if turn is None:
        raise TurnNotFound(f"no message {exchange_id} on a conversation's current path",
                           hint="choose its version first, or reload the conversation")
    companion = you.companion
    return streamed(await checked(lambda: companion.turn(turn.session_id, body.content, replacing=exchange_id)),
                    f"editing message {exchange_id}")


@router.post("/exchanges/{exchange_id}/choose")
async def choose(exchange_id: RowId, you: AsPerson) -> dict[str, Any]:
    """Make this version of a turn the current one (and what last followed it); returns the conversation."""
    session_id = await run_in_threadpool(you.companion.choose, exchange_id)
    return await run_in_threadpool(messages_of, you.store, session_id)


@router.get("/exchanges/{exchange_id}/trace")
async def trace(exchange_id: RowId, you: AsPerson) -> dict[str, Any]:
    """Why a reply says what it says: the memories that went into its context, each dated and with how it was
    found (``kind`` "context"); or, for an imported reply, who wrote it and when (``kind`` "imported")."""
    found = await run_in_threadpool(you.companion.trace, exchange_id)
    if found is None:
        raise SessionNotFound(f"no context trace for exchange {exchange_id}",
                              hint="traces exist for replies only, and are kept with the reply they explain")
    return found
