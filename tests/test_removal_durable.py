"""A removal is one durable state in ``household.db`` that every process sees: one cut short is
listed and finished from the terminal; a request already on its way when `lyra people remove` ran in another
process never brings the person's folder back; an edit of the household memory arriving during its author's
removal is refused; the confirmation says which later versions stay.

The real commands in this process (``lyra_local.cli.main``), the real app on scripted models, real SQLite.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from lyra_local.store.household import Household, Person, PersonNotFound

from .test_cli_people import SAM_PASS, Lyra, household, lyra, remember, two  # noqa: F401  (fixtures)

BASE = "http://127.0.0.1"


def everything_in(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_a_removal_cut_short_is_listed_and_finished_from_the_terminal(two: Lyra, household: Household,  # noqa: F811
                                                                        tmp_path: Path) -> None:
    remember(household, "Sam", "narwhal-marker")
    sam = household.by_name("Sam")
    assert sam is not None
    folder = household.person_dir(sam)
    household.begin_removal(sam.id)  # where a `lyra people remove` killed after its first step leaves it
    code, out, _ = two("people", "list")
    assert code == 0 and "Sam\tremoval unfinished\t`lyra people remove Sam` finishes it" in out
    code, _, err = two("people", "add", "Sam", "--secret-stdin", stdin=SAM_PASS + "\n")
    assert code == 2 and "has not finished" in err and "lyra people remove Sam" in err
    code, out, err = two("people", "remove", "Sam", "--yes")
    assert code == 0, err
    assert "finished removing Sam" in out
    assert not folder.exists() and b"narwhal-marker" not in everything_in(tmp_path / "data")
    assert "Sam" not in two("people", "list")[1]
    assert two("people", "add", "Sam", "--secret-stdin", stdin=SAM_PASS + "\n")[0] == 0  # the name is free


@pytest.fixture
def app(make_settings: Any) -> Iterator[FastAPI]:
    """The owner (Ada, with a password) and Ben, an adult, on the real app; the dream off, so that nothing of
    the server's own opens Ben's memory before a test does."""
    from lyra_local.llm.registry import Models
    from lyra_local.web import create_app

    from .fakes import FakeChatModel, FakeEmbedder

    settings = make_settings('[companion]\nuser_name = "Ada"\n')
    app = create_app(settings, models=Models(settings, chat=FakeChatModel(), embed=FakeEmbedder()))  # type: ignore[arg-type]
    with TestClient(app, base_url=BASE) as ada:
        assert ada.put("/api/me/secret", json={"secret": "ada-password-1"}).status_code == 200
        assert ada.post("/api/people", json={"name": "Ben", "secret": "ben-password-1"}).status_code == 200
        app.state.ada = ada
        yield app


def ben_of(app: FastAPI) -> Person:
    ben = app.state.lyra.household.by_name("Ben")
    assert ben is not None
    return ben


def test_a_request_on_its_way_never_brings_back_the_folder_of_someone_removed_elsewhere(app: FastAPI) -> None:
    state = app.state.lyra
    ben = ben_of(app)  # what a request of Ben's holds once it is past the login check
    folder = state.household.person_dir(ben)
    elsewhere = Household(state.household.data_dir)  # `lyra people remove Ben`, in another process
    try:
        from lyra_local.person_removal import opened_alone, remove_opened

        with opened_alone(elsewhere, ben, "") as store:
            remove_opened(elsewhere, ben, store)
    finally:
        elsewhere.close()
    assert not folder.exists()
    with pytest.raises(PersonNotFound):
        state.store_of(ben)  # the request reaches for Ben's memory
    assert not folder.exists()  # and no folder came back for words to be stored in


def shared(app: FastAPI) -> TestClient:
    """Ben writes the household memory, then Ada saves a version over his (the whole text, his line in it)."""
    ben = TestClient(app, base_url=BASE)
    assert ben.post("/api/auth/login", json={"name": "Ben", "secret": "ben-password-1"}).status_code == 200
    assert ben.put("/api/household/memory", json={"content": "Bins go out on Tuesday."}).status_code == 200
    assert app.state.ada.put("/api/household/memory", json={"content": "Bins go out on Tuesday.\nThe dog is Rex."}
                             ).status_code == 200
    return ben


def test_an_edit_of_the_household_memory_on_its_way_during_its_authors_removal_is_refused(app: FastAPI) -> None:
    state, ada = app.state.lyra, app.state.ada
    ben = ben_of(app)
    shared(app)
    assert ada.delete(f"/api/people/{ben.id}").status_code == 200
    with pytest.raises(PersonNotFound):  # Ben's edit, past the login check before the removal began
        state.household.shared.write("Ben was here, and stays", ben)
    history = ada.get("/api/household/memory/history").json()["versions"]
    assert [v["author"] for v in history] == ["Ada"]
    assert "Ben was here" not in str(history)


def test_a_removal_says_which_household_memory_versions_stay(app: FastAPI) -> None:
    ben = ben_of(app)
    shared(app)
    removal = app.state.ada.get(f"/api/people/{ben.id}/removal").json()
    assert (removal["household_versions"], removal["household_versions_after"]) == (1, 1)
