"""`lyra --person NAME` proves it acts for NAME once the household has several people: one of
their API tokens in ``$LYRA_TOKEN``, or their password typed on a terminal; otherwise it opens nothing, so
``sessions`` and ``recall`` print nobody's memory to whoever types the command. The real commands in this
process, on real SQLite and FAISS."""

from __future__ import annotations

import pytest

from lyra_local.store.household import Household

from .test_cli_people import SAM_PASS, Lyra, household, lyra, remember, two  # noqa: F401  (fixtures)


def test_acting_as_someone_else_needs_their_token_or_password(two: Lyra, household: Household,  # noqa: F811
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    remember(household, "Sam", "SAM-MARKER the bike in the shed")
    for command in (("sessions",), ("recall", "MARKER", "--mode", "bm25")):
        code, out, err = two("--person", "Sam", *command, token=None)  # no token, no terminal
        assert code == 2 and "needs their password" in err and "SAM-MARKER" not in out + err
    ada = household.by_name("Ada")
    assert ada is not None
    adas = household.tokens.create(ada.id, "ada's")[1]
    code, out, err = two("--person", "Sam", "recall", "MARKER", "--mode", "bm25", token=adas)
    assert code == 2 and "not a token of Sam's" in err and "SAM-MARKER" not in out  # the owner's is not Sam's
    code, out, err = two("--person", "Sam", "recall", "MARKER", "--mode", "bm25")  # one of Sam's own tokens
    assert code == 0 and "SAM-MARKER" in out, err

    monkeypatch.setattr("lyra_local.people.on_terminal", lambda: True)  # a terminal, where a password is typed
    typed = iter(["not-sams-password", SAM_PASS])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(typed))
    code, out, err = two("--person", "Sam", "recall", "MARKER", "--mode", "bm25", token=None)
    assert code == 2 and "not Sam's password" in err and "SAM-MARKER" not in out
    code, out, err = two("--person", "Sam", "recall", "MARKER", "--mode", "bm25", token=None)
    assert code == 0 and "SAM-MARKER" in out, err
