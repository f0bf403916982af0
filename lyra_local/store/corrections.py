"""The person's corrections of derived memory: edits that the dream never overwrites, deletions that stick.

An edited gist, digest or arc is stored as the person's own statement
(``method = 'user'``) and stays a source for what is built on it; the dream
leaves it alone. A deleted one is recorded in ``dismissed`` with what it was
built from at that moment (a session's last turn, a digest's basis, the arc's
basis): the dream does not write it again until that changes. Forgetting its
sources still removes an edited memory (provenance): the person's words about
a forgotten conversation go with it. An edited arc or self-state is the
person's own statement, built from nothing: only deleting it removes it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import Conflict, NotFound
from . import provenance
from .blobs import put_vector
from .db import utc_now
from .derived import Digest, Gist, ProfileFact, _digest, _fact, _gist, rejection_parts, rejection_target
from .forget.erase import Doomed, note
from .forget.scrub import scrub
from .kinds import KINDS, NODES, STALE_KINDS
from .memory_dump import ADOPT

if TYPE_CHECKING:
    from .store import Store


class Corrections:
    def __init__(self, store: Store) -> None:
        self.store = store

    # -- gists ------------------------------------------------------------------------------------

    def edit_gist(self, session_id: int, content: str, vector: npt.NDArray[np.float32] | None = None,
                  model: str | None = None) -> Gist:
        """The person's own summary of a session: kept as written, never redrafted. Not of one off the record:
        it would be remembered."""
        if not self.store.sessions.get(session_id).remember:
            raise Conflict(f"session {session_id} is off the record: nothing of it is remembered, a summary neither",
                           hint="start a conversation that is remembered to keep this")
        last = self.store.conn().execute("SELECT max(id) FROM exchanges WHERE session_id = ?",
                                         (session_id,)).fetchone()[0]
        gist = self.store.derived.put_gist(session_id, content, int(last or 0), vector, model, method="user")
        with self.store.write() as conn:
            conn.execute("DELETE FROM dismissed WHERE kind = 'gist' AND target = ?", (str(session_id),))
        return gist

    def delete_gist(self, session_id: int) -> int:
        """Delete a session's gist (and what was built on it); it is not redrafted until the session has new turns."""
        row = self.store.conn().execute("SELECT id, covers_upto FROM gists WHERE session_id = ?",
                                        (session_id,)).fetchone()
        if row is None:
            raise NotFound(f"session {session_id} has no gist")
        return self._delete("gist", [int(row[0])], (str(session_id), str(row[1])))

    # -- digests ----------------------------------------------------------------------------------

    def edit_digest(self, digest_id: int, content: str, vector: npt.NDArray[np.float32] | None = None,
                    model: str | None = None) -> Digest:
        with self.store.write() as conn:
            row = conn.execute("UPDATE digests SET content = ?, method = 'user', updated_at = ? WHERE id = ? "
                               f"AND {KINDS['digest'].where_current('digests')} RETURNING *",
                               (content, utc_now(), digest_id)).fetchone()
            if row is None:
                raise NotFound(f"no digest {digest_id}")
            if vector is not None and model is not None:
                put_vector(conn, "digest", model, digest_id, vector)
            conn.execute("DELETE FROM dismissed WHERE kind = 'digest' AND target = ?",
                         (f"{row['granularity']}:{row['period']}",))
        return _digest(row)

    def delete_digest(self, digest_id: int) -> int:
        row = self.store.conn().execute("SELECT granularity, period, basis FROM digests WHERE id = ?",
                                        (digest_id,)).fetchone()
        if row is None:
            raise NotFound(f"no digest {digest_id}")
        return self._delete("digest", [digest_id], (f"{row[0]}:{row[1]}", str(row[2])))

    # -- facts ------------------------------------------------------------------------------------

    def confirm_fact(self, fact_id: int) -> ProfileFact:
        """"That's right": the fact becomes the person's own statement, which the dream never changes. It keeps
        its sources: forgetting what it was said in still removes it."""
        with self.store.write() as conn:
            row = conn.execute("UPDATE profile_facts SET author = 'user' WHERE id = ? AND superseded_at IS NULL "
                               f"AND {KINDS['fact'].where_current('profile_facts')} RETURNING *",
                               (fact_id,)).fetchone()
        if row is None:
            raise NotFound(f"no current fact {fact_id}")
        return _fact(row)

    def reject_fact(self, fact_id: int) -> int:
        """"That's wrong": the fact goes, and the dream does not learn that key again from what was said in
        its conversation so far (the dismissal names the key and the session, never the value: a person's
        words would outlive a forget in it; its basis is the session's last turn now)."""
        fact = self.store.derived.fact(fact_id)
        if fact.source_session_id is None or fact.author == "user":  # the person's own: nothing to learn again
            return self._delete("fact", [fact_id], None)
        return self._delete("fact", [fact_id], (rejection_target(fact.key, fact.source_session_id),
                                                 self._last_turn(fact.source_session_id)))

    def rejected_facts(self) -> dict[tuple[str, int], int]:
        """(key, session id) -> the last turn of that session when the person said its fact was wrong: the
        key is not learnt again from that session's turns up to that one. One imported from elsewhere stands
        for the whole session as it is here now."""
        found = self.dismissed("fact")
        adopt = {t: self._last_turn(int(rejection_parts(t)[1])) for t, basis in found.items() if basis == ADOPT}
        if adopt:
            found = self.dismissed("fact", adopt=adopt)
        out = {}
        for target, basis in found.items():
            key, session = rejection_parts(target)
            if session.isdigit() and basis.isdigit():
                out[(key, int(session))] = int(basis)
        return out

    def _last_turn(self, session_id: int) -> str:
        return str(self.store.conn().execute("SELECT coalesce(max(id), 0) FROM exchanges WHERE session_id = ?",
                                             (session_id,)).fetchone()[0])

    # -- the arc and the self-state --------------------------------------------------------------

    def edit_narrative(self, content: str) -> int:
        basis = self.store.derived.narrative_basis() or ""
        with self.store.write() as conn:
            row = conn.execute("INSERT INTO narrative (content, created_at, basis, method) VALUES (?, ?, ?, 'user') "
                               "RETURNING id", (content, utc_now(), basis)).fetchone()
            conn.execute("DELETE FROM dismissed WHERE kind = 'narrative'")
        return int(row[0])

    def delete_narrative(self, basis: str) -> int:
        """Delete the arc (every version: an older one must not step in); the dream writes none until what an
        arc is built from (``basis``) changes."""
        if self.store.derived.narrative_version() is None:
            raise NotFound("there is no arc")
        versions = [int(r[0]) for r in self.store.conn().execute("SELECT id FROM narrative")]
        return self._delete("narrative", versions, ("narrative", basis))

    def _delete(self, kind: str, ids: list[int], dismissed: tuple[str, str] | None) -> int:
        """Delete memories of ``kind`` (and what was built on them), noted as a deletion: in ``dismissed`` as
        (target, basis), so the dream does not write it again while its sources stay as they are, and in the
        forget ledger, so a restore deletes it again; then what they leave on disk goes too. How many went."""
        dismissals = [(kind, *dismissed)] if dismissed else []
        note(self.store, Doomed(memories={kind: ids}, dismissed=dismissals))
        with self.store.write() as conn:
            counts = provenance.forget(conn, [(kind, i) for i in ids])
            self.dismiss_again(conn, dismissals)
        scrub(self.store, [KINDS[k] for k, n in counts.items() if n and k in KINDS])
        return sum(counts.values())

    @staticmethod
    def dismiss_again(conn: sqlite3.Connection, dismissals: Sequence[tuple[str, str, str]]) -> bool:
        """Inside a write transaction: record deletions (kind, target, basis) as standing; whether any was new."""
        return sum(conn.execute("INSERT OR REPLACE INTO dismissed (kind, target, basis, dismissed_at) "
                                "SELECT ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM dismissed WHERE kind = ? AND "
                                "target = ? AND basis = ?)", (*d, utc_now(), *d)).rowcount for d in dismissals) > 0

    def edit_self_state(self, changes: dict[str, Any]) -> int:
        """The person's correction of the companion's self-state; the dream keeps these fields as they are.

        The new version copies the other fields (narrative, reflections) from the current one, so it is built
        from it: a forget that removes the current version removes this one too, correction and all."""
        with self.store.write() as conn:  # read in the write: a version the dream writes meanwhile is not lost
            version = self.store.derived.self_state_version()
            current = version[1] if version else {}
            state = {**current, **changes, "edited_by": "user", "edited_fields": sorted(changes)}
            row = conn.execute("INSERT INTO self_state (state, created_at) VALUES (?, ?) RETURNING id",
                               (json.dumps(state), utc_now())).fetchone()
            if version is not None:  # it carries the fields the dream wrote: forgetting their sources reaches it
                provenance.record(conn, "self_state", int(row[0]), [("self_state", version[0])])
        return int(row[0])

    # -- what the dream must respect --------------------------------------------------------------

    def their_digests(self) -> set[tuple[str, str]]:
        """(granularity, period) of the digests the person wrote."""
        rows = self.store.conn().execute("SELECT granularity, period FROM digests t WHERE method = 'user' "
                                         f"AND {KINDS['digest'].where_current()}")
        return {(str(r[0]), str(r[1])) for r in rows}

    def their_arc(self) -> bool:
        """Whether the current arc is the person's own."""
        row = self.store.conn().execute(f"SELECT method FROM narrative t WHERE {KINDS['narrative'].where_current()} "
                                        "ORDER BY id DESC LIMIT 1").fetchone()
        return row is not None and row[0] == "user"

    def dismissed(self, kind: str, *, adopt: dict[str, str] | None = None) -> dict[str, str]:
        """Target -> basis of the deleted memories of ``kind``. A deletion imported from another data directory
        (basis ``ADOPT``: ``memory_dump``) takes the basis ``adopt`` gives its target now, once: it stands until
        what that memory is built from changes."""
        found = {str(r[0]): str(r[1]) for r in self.store.conn().execute(
            "SELECT target, basis FROM dismissed WHERE kind = ?", (kind,))}
        pinned = {t: (adopt or {})[t] for t, basis in found.items() if basis == ADOPT and t in (adopt or {})}
        if pinned:
            with self.store.write() as conn:
                conn.executemany("UPDATE dismissed SET basis = ? WHERE kind = ? AND target = ? AND basis = ?",
                                 [(basis, kind, t, ADOPT) for t, basis in pinned.items()])
        return {**found, **pinned}

    def content(self, kind: str, item_id: int) -> str:
        """The text of a gist, digest or arc version (what its sources are shown for); '' for other kinds."""
        described = KINDS.get(kind)
        if described is None or described not in STALE_KINDS:
            return ""
        row = self.store.conn().execute(f"SELECT {described.text} FROM {described.table} WHERE id = ?",
                                        (item_id,)).fetchone()
        return "" if row is None else str(row[0])

    def sources(self, kind: str, item_id: int) -> list[dict[str, Any]]:
        """The turns behind a memory, each with its conversation's name and its date, oldest first."""
        if kind not in NODES:
            raise NotFound(f"unknown kind of memory {kind!r}")
        conn = self.store.conn()
        ids = provenance.turns_behind(conn, kind, item_id)
        rows = conn.execute(
            "SELECT e.id, e.session_id, s.name AS session_name, e.role, e.content, e.created_at FROM exchanges e "
            "JOIN sessions s ON s.id = e.session_id WHERE e.id IN (SELECT value FROM json_each(?)) ORDER BY e.id",
            (json.dumps(ids),))
        return [dict(r) for r in rows]

    def gist(self, gist_id: int) -> Gist:
        row = self.store.conn().execute("SELECT * FROM gists WHERE id = ?", (gist_id,)).fetchone()
        if row is None:
            raise NotFound(f"no gist {gist_id}")
        return _gist(row)
