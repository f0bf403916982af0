"""The `lyra` command acts as one person of the household: `--person`, the default rule, `lyra people`
(the owner adds, resets and removes; anyone sets their own password), `lyra tokens`, and `lyra dream --all`."""

from __future__ import annotations

import contextlib
import io
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lyra_local.cli import main
from lyra_local.memory import Memory
from lyra_local.passwords import verify_secret
from lyra_local.store import Store
from lyra_local.store.household import Household

from .conftest import MODELS_DIR
from .fakes import FakeEmbedder

Lyra = Callable[..., tuple[int, str, str]]
OWNER_PASS, SAM_PASS = "owner-pass-1", "sam-pass-1"


@pytest.fixture
def lyra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Lyra:
    """``lyra(*args, stdin="")``: the command in this process on a fresh data directory -> (code, out, err)."""
    for name in [n for n in os.environ if n.startswith("LYRA_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("LYRA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LYRA_MODELS_DIR", str(MODELS_DIR))
    config = tmp_path / "lyra.toml"
    config.write_text('[companion]\nuser_name = "Ada"\n')

    def run(*args: str, stdin: str = "", token: str | None = None) -> tuple[int, str, str]:
        """``token``: in ``$LYRA_TOKEN``, which proves ``--person`` in a household of several (people.prove)."""
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        if token is None:
            monkeypatch.delenv("LYRA_TOKEN", raising=False)
        else:
            monkeypatch.setenv("LYRA_TOKEN", token)
        capsys.readouterr()
        code = main(["--config", str(config), *args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def two(lyra: Lyra, tmp_path: Path) -> Lyra:
    """A household of Ada (the owner, with a password) and Sam; a command naming ``--person`` proves it with a
    token of that person's (``$LYRA_TOKEN``) unless the test gives one (``token=``)."""
    assert lyra("people", "passwd", "--secret-stdin", stdin=OWNER_PASS + "\n")[0] == 0
    code, out, err = lyra("people", "add", "Sam", "--secret-stdin", stdin=SAM_PASS + "\n")
    assert code == 0, err
    assert "added Sam (adult)" in out
    tokens: dict[str, str] = {}

    def token_of(name: str) -> str | None:
        """A token of the person called ``name``, made on first use (None: nobody is)."""
        opened = Household(tmp_path / "data")
        try:
            person = opened.by_name(name)
            if person is not None and person.id not in tokens:
                tokens[person.id] = opened.tokens.create(person.id, "proves --person")[1]
            return None if person is None else tokens[person.id]
        finally:
            opened.close()

    def run(*args: str, stdin: str = "", **kw: str | None) -> tuple[int, str, str]:
        if "--person" in args and "token" not in kw:
            kw["token"] = token_of(args[args.index("--person") + 1])
        return lyra(*args, stdin=stdin, **kw)

    return run


@pytest.fixture
def household(tmp_path: Path) -> Iterator[Household]:
    with contextlib.closing(Household(tmp_path / "data")) as opened:
        yield opened


def remember(household: Household, name: str, text: str) -> None:
    person = household.by_name(name)
    assert person is not None
    store = Store(household.person_dir(person))
    try:
        session = store.sessions.create(f"{name}'s conversation")
        Memory(store, FakeEmbedder()).remember(session.id, "user", text)
    finally:
        store.close()


def test_one_person_needs_no_person_and_the_owner_must_set_a_password_before_adding_anyone(lyra: Lyra) -> None:
    code, out, err = lyra("sessions")
    assert code == 0, err  # the only person: today's single-person Lyra
    code, _, err = lyra("people", "add", "Sam", "--secret-stdin", stdin=SAM_PASS + "\n")
    assert code == 2 and "set your own password first" in err and "lyra people passwd" in err
    code, _, err = lyra("people", "passwd", "--secret-stdin", stdin="short\n")
    assert code == 2 and "8" in err  # a password under 8 characters is refused
    code, out, _ = lyra("people", "list")
    assert code == 0 and "Ada\towner\tno password" in out


def test_with_two_people_a_memory_command_names_the_choice_and_a_household_command_acts_as_the_owner(
        two: Lyra, household: Household) -> None:
    remember(household, "Ada", "ADA-MARKER the roses")
    remember(household, "Sam", "SAM-MARKER the bike")
    code, _, err = two("sessions")
    assert code == 2 and "whose memory?" in err and "Ada" in err and "Sam" in err and "--person" in err
    code, out, err = two("--person", "sam", "sessions")  # names are compared in any case
    assert code == 0, err
    assert "Sam's conversation" in out and "Ada's conversation" not in out
    code, out, err = two("--person", "Ada", "recall", "MARKER", "--mode", "bm25")
    assert code == 0, err
    assert "ADA-MARKER" in out and "SAM-MARKER" not in out
    code, _, err = two("--person", "Nobody", "sessions")
    assert code == 2 and "no one called 'Nobody'" in err
    code, out, _ = two("people", "list")  # a household command: the owner, without --person
    assert code == 0 and "Ada\towner\tpassword set" in out and "Sam\tadult\tpassword set" in out


def test_only_the_owner_manages_people_and_anyone_sets_their_own_password(two: Lyra, household: Household) -> None:
    code, _, err = two("--person", "Sam", "people", "add", "Cleo", "--child", "--secret-stdin", stdin="1234\n")
    assert code == 2 and "not the household's owner" in err
    assert household.by_name("Cleo") is None
    code, _, err = two("people", "add", "Cleo", "--child", "--secret-stdin", stdin="12\n")
    assert code == 2 and household.by_name("Cleo") is None  # a PIN of 4-8 digits
    code, out, err = two("people", "add", "Cleo", "--child", "--secret-stdin", stdin="1234\n")
    assert code == 0 and "added Cleo (child)" in out, err
    code, _, err = two("people", "add", "cleo", "--secret-stdin", stdin="another-pass\n")
    assert code == 2 and "already in this household" in err

    sam = household.by_name("Sam")
    assert sam is not None
    raw = household.logins.open(sam.id)
    code, out, err = two("people", "reset", "Sam", "--secret-stdin", stdin="sam-new-pass\n")
    assert code == 0 and "logins on every device ended" in out, err
    assert verify_secret("sam-new-pass", household.logins.secret_of(sam.id))
    assert household.logins.person_of(raw) is None  # a reset ends their logins

    code, out, err = two("--person", "Sam", "people", "passwd", "--secret-stdin", stdin="sam-own-pass\n")
    assert code == 0, err
    assert verify_secret("sam-own-pass", household.logins.secret_of(sam.id))
    ada = household.by_name("Ada")
    assert ada is not None and verify_secret(OWNER_PASS, household.logins.secret_of(ada.id))  # the owner's untouched

    code, _, err = two("people", "passwd")  # no terminal to type on, and no --secret-stdin
    assert code == 2 and "--secret-stdin" in err


def test_removing_a_person_says_what_it_forgets_asks_and_forgets_it(two: Lyra, household: Household) -> None:
    remember(household, "Ada", "ADA-MARKER the roses")
    remember(household, "Sam", "SAM-MARKER the bike")
    sam = household.by_name("Sam")
    assert sam is not None
    household.tokens.create(sam.id, "script")
    folder = household.person_dir(sam)
    assert (folder / "lyra.db").is_file()

    code, out, err = two("people", "remove", "Sam")  # no terminal to confirm on
    assert code == 2 and "without confirmation" in err and "--yes" in err
    assert "1 conversation(s), 1 message(s)" in out and "1 API token(s)" in out
    assert household.by_name("Sam") is not None and folder.is_dir()  # nothing happened

    code, _, err = two("people", "remove", "Ada", "--yes")
    assert code == 2 and "the owner cannot be removed" in err

    code, out, err = two("people", "remove", "Sam", "--yes")
    assert code == 0, err
    assert "removed Sam" in out
    assert household.by_name("Sam") is None and household.people(removing=True) == []
    assert household.tokens.of(sam.id) == []
    assert not folder.exists()
    code, out, _ = two("recall", "MARKER", "--mode", "bm25")  # one person again: no --person needed
    assert code == 0 and "ADA-MARKER" in out


def test_people_remove_refuses_while_their_memory_is_open_elsewhere(two: Lyra, household: Household) -> None:
    sam = household.by_name("Sam")
    assert sam is not None
    store = Store(household.person_dir(sam))  # as a server serving Sam would hold it
    try:
        code, _, err = two("people", "remove", "Sam", "--yes")
    finally:
        store.close()
    assert code == 2 and "Sam's memory is open" in err and "People page" in err
    assert household.by_name("Sam") is not None


def test_tokens_are_a_persons_own(two: Lyra, household: Household) -> None:
    code, _, err = two("tokens", "create", "laptop")
    assert code == 2 and "whose memory?" in err  # a token is a key to one memory: never guessed
    code, out, err = two("--person", "Sam", "tokens", "create", "laptop")
    assert code == 0, err
    raw = out.strip()
    assert raw.startswith("lyra_") and "\n" not in raw  # alone on stdout, for `TOKEN=$(lyra tokens create)`
    assert "acts as Sam" in err
    token_person = household.tokens.person_of(raw)
    assert token_person is not None and token_person.name == "Sam"
    code, out, _ = two("--person", "Sam", "tokens", "list")
    assert code == 0 and "laptop" in out and raw not in out
    token_id = next(t.id for t in household.tokens.of(token_person.id) if t.name == "laptop")
    code, _, err = two("--person", "Ada", "tokens", "revoke", str(token_id))
    assert code == 2 and "no such token" in err  # another person's token reads as not found
    code, out, err = two("--person", "Sam", "tokens", "revoke", str(token_id))
    assert code == 0, err
    assert household.tokens.person_of(raw) is None


def test_dream_all_visits_everyone_in_turn_and_dream_asks_whose_memory(two: Lyra, household: Household) -> None:
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        code, _, err = two("dream")
        assert code == 2 and "whose memory?" in err
        code, _, err = two("--person", "Sam", "dream", "--all")
        assert code == 2 and "leave out --person" in err
        code, out, err = two("dream", "--all")
        assert code == 0, err
        assert "Ada's memory is caught up" in out and "Sam's memory is caught up" in out
        assert out.index("Ada's") < out.index("Sam's")
        code, out, err = two("--person", "Sam", "dream")
        assert code == 0, err
        assert "nothing to consolidate: the memory is caught up" in out
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    for person in household.people():  # each memory saw the worker, registered in it and completed
        store = Store(household.person_dir(person))
        try:
            workers = [i for i in store.coord.instances() if i["kind"] == "dream"]
        finally:
            store.close()
        assert workers and all(i["status"] == "done" for i in workers), (person.name, workers)


def test_a_persons_own_backup_and_restore_reach_their_memory_only(two: Lyra, household: Household,
                                                                   tmp_path: Path) -> None:
    remember(household, "Ada", "ADA-MARKER the roses")
    remember(household, "Sam", "SAM-MARKER the bike")
    code, _, err = two("--person", "Sam", "backup", str(tmp_path / "sam.db"))
    assert code == 0, err
    copy = (tmp_path / "sam.db").read_bytes()
    assert b"SAM-MARKER" in copy and b"ADA-MARKER" not in copy
    remember(household, "Sam", "SAM-LATER the new saddle")
    remember(household, "Ada", "ADA-LATER the tulips")
    code, out, err = two("--person", "Sam", "restore", str(tmp_path / "sam.db"))
    assert code == 0, err
    sam = household.by_name("Sam")
    assert sam is not None and str(household.person_dir(sam)) in out
    for name, present, absent in (("Sam", ("SAM-MARKER",), ("SAM-LATER", "ADA")),
                                  ("Ada", ("ADA-MARKER", "ADA-LATER"), ("SAM",))):
        code, out, err = two("--person", name, "recall", "MARKER LATER", "--mode", "bm25")
        assert code == 0, err
        assert all(p in out for p in present) and not any(a in out for a in absent), (name, out)
