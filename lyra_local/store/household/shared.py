"""The household memory (``household_memory``): what people chose to share with everyone, every version kept
with who wrote it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import db
from .records import Person, PersonNotFound, SharedVersion, shared_of_row

if TYPE_CHECKING:
    from .people import Household


class SharedMemory:
    def __init__(self, household: Household) -> None:
        self._household = household

    def current(self) -> SharedVersion | None:
        row = self._household.conn().execute("SELECT * FROM household_memory ORDER BY id DESC LIMIT 1").fetchone()
        return None if row is None else shared_of_row(row)

    def write(self, content: str, author: Person) -> SharedVersion:
        """A new version of the household memory (each earlier one is kept, with who wrote it); refused once the
        author's removal has begun, in the very transaction that would store it, so that an edit on its way while
        they are removed is never stored after their versions were deleted."""
        with self._household.write() as conn:
            if conn.execute("SELECT 1 FROM people WHERE id = ? AND removing = 0", (author.id,)).fetchone() is None:
                raise PersonNotFound(f"{author.name} is no longer in this household: their edit was not saved")
            conn.execute("INSERT INTO household_memory (content, author_id, author_name, created_at) "
                         "VALUES (?, ?, ?, ?)", (content, author.id, author.name, db.utc_now()))
        version = self.current()
        assert version is not None
        return version

    def by(self, person_id: str) -> tuple[int, int]:
        """(versions of the household memory ``person_id`` wrote, versions others saved after their first): what
        a removal deletes, and what stays as its authors saved it (an edit saves the whole text, so those may
        still hold words of theirs)."""
        row = self._household.conn().execute(
            "SELECT (SELECT COUNT(*) FROM household_memory WHERE author_id = :p), "
            "(SELECT COUNT(*) FROM household_memory WHERE author_id != :p AND id > "
            "(SELECT COALESCE(MIN(id), 1 << 62) FROM household_memory WHERE author_id = :p))",
            {"p": person_id}).fetchone()
        return int(row[0]), int(row[1])

    def history(self) -> list[SharedVersion]:
        return [shared_of_row(r) for r in self._household.conn().execute(
            "SELECT * FROM household_memory ORDER BY id DESC")]
