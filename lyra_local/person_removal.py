"""Removing a person from the household: everything they said and everything built from it forgotten through
the same forget as everywhere, their folder deleted, then their row.

One sequence for the People page (``AppState.remove_person`` in ``web/app.py``) and ``lyra people remove``, so
the two can never forget differently. The person can no longer log in from the first step
(``Household.begin_removal`` ends their sessions and tokens); a removal cut short is finished later from the
same step (``finish_removal``, which the server runs at start). It never touches the first person's memory:
that is the data directory's own.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator

from .errors import LyraError
from .store import Store
from .store.files.dirlock import DataDirBusy, DirLock, find_holders
from .store.forget.erase import forget
from .store.forget.plan import plan_forget
from .store.household import Household, Person

REASON = "the person was removed"


def remove_person(household: Household, person_id: str, *, open_store: Callable[[Person], Store],
                  close: Callable[[Person], None]) -> Person:
    """Remove ``person_id`` for good. ``open_store``: their store (opened, or the one already open);
    ``close``: close whatever of theirs is open (their store, their companion) before the folder goes."""
    person = household.begin_removal(person_id)
    finish_removal(household, person, open_store=open_store, close=close)
    return person


@contextlib.contextmanager
def opened_alone(household: Household, person: Person, busy_hint: str) -> Iterator[Store | None]:
    """The person's memory opened by this process alone, its folder's lock held exclusively for the block
    (``DataDirBusy``, naming who holds it, while another process has it open: what it wrote later would bring
    their folder back); None when the folder is gone already."""
    folder = household.person_dir(person)
    lock = DirLock(folder)
    if folder.exists() and not lock.try_exclusive():
        holders = "; ".join(map(str, find_holders(folder))) or "another process"
        raise DataDirBusy(f"{person.name}'s memory is open in {holders}", hint=busy_hint)
    try:
        store = Store(folder, lock=lock) if folder.exists() else None  # under our exclusive hold
        try:
            yield store
        finally:
            if store is not None:
                store.close()
    finally:
        lock.release()


def remove_opened(household: Household, person: Person, store: Store | None) -> None:
    """``remove_person`` on the memory ``opened_alone`` gave."""
    def theirs(_: Person) -> Store:
        assert store is not None, "a removal opens only a folder that exists"
        return store

    remove_person(household, person.id, open_store=theirs, close=lambda _: store.close() if store else None)


def finish_opened(household: Household, person: Person, store: Store | None) -> None:
    """``finish_removal`` (a removal cut short) on the memory ``opened_alone`` gave."""
    def theirs(_: Person) -> Store:
        assert store is not None, "a removal opens only a folder that exists"
        return store

    finish_removal(household, person, open_store=theirs, close=lambda _: store.close() if store else None)


def finish_removal(household: Household, person: Person, *, open_store: Callable[[Person], Store],
                   close: Callable[[Person], None]) -> None:
    """The rest of a removal begun (``Household.begin_removal``): forget, close, delete the folder, the row."""
    folder = household.person_dir(person)
    if folder == household.data_dir:
        raise LyraError("the first person's memory is the data directory's own: it is never removed")
    if folder.exists():
        forget_everything(open_store(person))
    close(person)
    shutil.rmtree(folder, ignore_errors=True)
    if folder.exists():
        raise LyraError(f"could not delete {folder}", hint="delete that folder by hand; nothing else uses it")
    household.finish_removal(person.id)


def forget_everything(store: Store) -> None:
    """Every conversation of the store and everything built from them, through the one forget (its imports
    stopped first: what they would bring could not be planned for)."""
    store.uploads.stop_all(REASON, wait_s=10)
    ids = store.sessions.ids()
    if ids:
        forget(store, plan_forget(store, sessions=[f"#{i}" for i in ids]))
