"""Choosing what to forget: by conversation, by date, by text, by id, as a plan carried out by ``forget.forget``.

By text, the plan reaches every column the registry says holds words
(``store/kinds.py``), folded (``store/forget/folding.py``): turns on the path and
set aside, the memories whose own words hold it, the conversations whose
name holds it (renamed by the day they began) and the logs that hold it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...errors import BadRequest
from ..kinds import KINDS
from .matching import derived_holding, holds, logs_holding, needle, rows_holding

if TYPE_CHECKING:
    from ..store import Store


@dataclass(frozen=True)
class ForgetPlan:
    """What a forget would remove: whole sessions, single turns of other sessions, memories whose own words hold
    the text asked for, and the conversations whose name holds it (renamed); ``matching`` reaches the logs too."""

    session_ids: list[int]
    exchange_ids: list[int]
    memories: dict[str, list[int]] = field(default_factory=dict)
    renamed: list[int] = field(default_factory=list)
    matching: str | None = None

    logs: int = 0  # rows of the task notes, locks and failed passes that hold the text (they say "(forgotten)")

    @property
    def empty(self) -> bool:
        return not (self.session_ids or self.exchange_ids or any(self.memories.values()) or self.renamed
                    or self.logs)


def plan_forget(store: Store, *, sessions: Sequence[str] = (), before: str | None = None,
                matching: str | None = None, exchange_ids: Sequence[int] = (),
                memories: Mapping[str, Sequence[int]] | None = None) -> ForgetPlan:
    """Select by conversation (a reference ``lyra sessions`` shows: ``Sessions.resolve``), by date (turns before
    it), by text (every turn, on the path or set aside, memory and conversation name whose words hold it, folded
    over every column the registry says holds words), by turn id, and by memory id (kind -> ids). A turn of the
    person's takes the companion's reply to it along (``Exchanges.replies_to``)."""
    if matching is not None and not needle(matching):
        raise BadRequest("say what text to forget", hint="an empty text would match everything")
    conn = store.conn()
    whole = {store.sessions.resolve(ref).id for ref in sessions}
    turns: set[int] = set()
    args = {"before": before, "needle": needle(matching or "")}
    for kind in (KINDS["exchange"], KINDS["aside"]):
        clauses = ([f"t.{kind.time_column} < :before"] if before else []) + ([holds(kind)] if matching else [])
        if clauses:
            turns |= {int(r[0]) for r in conn.execute(
                f"SELECT t.{kind.key} FROM {kind.table} t WHERE {' OR '.join(clauses)}", args)}
    turns |= set(store.exchanges.replies_to(sorted(turns)))
    session_of = store.branches.sessions_of(sorted(turns))
    on_path: dict[int, int] = {}
    for sid, current in session_of.values():
        on_path[sid] = on_path.get(sid, 0) + current
    whole |= {sid for sid, n in on_path.items() if n and store.exchanges.count_in(sid) == n}  # left with no turn
    turns = {t for t in turns if t not in session_of or session_of[t][0] not in whole}
    turns |= {*exchange_ids, *store.exchanges.replies_to(exchange_ids)}  # asked for by id: their session stays
    named = {k: sorted(set(v)) for k, v in (memories or {}).items() if v}
    if not matching:
        return ForgetPlan(sorted(whole), sorted(turns), named)
    found = derived_holding(conn, matching)
    for name, given in named.items():
        found[name] = sorted(set(found.get(name, [])) | set(given))
    renamed = [int(i) for i in rows_holding(conn, KINDS["session"], matching) if int(i) not in whole]
    return ForgetPlan(sorted(whole), sorted(turns), found, renamed, matching, logs_holding(conn, matching))
