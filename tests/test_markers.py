"""Every test says what it needs: ``models`` (the real tiny GGUF models) and ``slow`` (a process, a browser).

The suite is collected in a child pytest (``--collect-only``, so nothing runs)
with this module as a plugin. For each test it writes the marks as ``-m`` sees
them (explicit ones and those conftest.py derives from fixtures) and what the
test's code reaches: its own body, its fixtures, and the test-suite functions
those call (``start`` in test_web_ui.py calls ``serve_lyra``), read from the
names in their bytecode, so a comment or a string does not count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import MODEL_FIXTURES, PROCESS_FIXTURES, REPO

# Names whose use means a test needs the real models (they load or read models/*.gguf, or the parsing pipeline
# in models/), or starts a process or a browser.
LOADS_MODELS = frozenset({"serve_lyra", "CHAT_GGUF", "EMBED_GGUF", "PARSER_DIR"})
STARTS_PROCESS = frozenset({"serve_lyra", "sync_playwright"})

# Tests that load the models through `serve_lyra` or `CHAT_GGUF` but are not marked yet: none. Add one here only
# with a reason; a test below fails once it is marked, so this list only shrinks.
NOT_YET_MARKED: frozenset[str] = frozenset()


def reached(roots: list[Any]) -> set[str]:
    """The global names used by ``roots`` and by the test-suite functions they use, transitively."""
    names: set[str] = set()
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        func = inspect_target(todo.pop())
        if func is None or id(func) in seen:
            continue
        seen.add(id(func))
        for used in code_names(func.__code__):
            names.add(used)
            target = func.__globals__.get(used)
            if isinstance(target, types.FunctionType) or callable(getattr(target, "_get_wrapped_function", None)):
                todo.append(target)
    return names


def inspect_target(obj: Any) -> types.FunctionType | None:
    """The plain function behind ``obj`` (a fixture, a context manager, a method), if it is the suite's own."""
    if callable(getattr(obj, "_get_wrapped_function", None)):  # a fixture function imported from another module
        obj = obj._get_wrapped_function()
    obj = getattr(obj, "__func__", obj)
    while hasattr(obj, "__wrapped__"):  # @contextmanager and friends
        obj = obj.__wrapped__
    if isinstance(obj, types.FunctionType) and obj.__module__.split(".")[0] == "tests":
        return obj
    return None


def code_names(code: types.CodeType) -> Iterator[str]:
    """Every global or attribute name in ``code`` and the code nested in it (lambdas, comprehensions)."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from code_names(const)


DUMP = "TEST_MARKERS_JSON"  # where the child writes (not LYRA_*: settings refuse unknown keys)


def pytest_collection_finish(session: pytest.Session) -> None:
    """A hook for the child (``-p tests.test_markers``): each test's marks, fixtures and reached names, as JSON."""
    tests = {}
    for item in session.items:
        fixturedefs = item._fixtureinfo.name2fixturedefs  # type: ignore[attr-defined]
        fixtures = [d.func for defs in fixturedefs.values() for d in defs]
        tests[item.nodeid] = {
            "marks": sorted({m.name for m in item.iter_markers()}),
            "fixtures": sorted(getattr(item, "fixturenames", ())),
            "reaches": sorted(reached([getattr(item, "function", None), *fixtures]) & (LOADS_MODELS | STARTS_PROCESS)),
        }
    Path(os.environ[DUMP]).write_text(json.dumps(tests))


def collect(out: Path) -> dict[str, dict[str, list[str]]]:
    """The whole suite collected (not run) in a child pytest with this module as a plugin."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-p", "tests.test_markers", "tests"], env={**os.environ, DUMP: str(out)}, cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(out.read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list[str]]]:
    return collect(tmp_path_factory.mktemp("markers") / "tests.json")


def lacking(suite: dict[str, dict[str, list[str]]], mark: str, needs: Any) -> list[str]:
    return sorted(node for node, t in suite.items() if needs(t) and mark not in t["marks"])


def unmarked(mark: str, nodes: list[str]) -> str:
    return f"these need @pytest.mark.{mark}:\n  " + "\n  ".join(nodes)


def test_a_test_using_a_model_fixture_is_marked_models(suite: dict[str, dict[str, list[str]]]) -> None:
    missing = lacking(suite, "models", lambda t: MODEL_FIXTURES & set(t["fixtures"]))
    assert not missing, unmarked("models", missing)  # conftest.py's hook marks them: is it still there?


def test_a_test_starting_lyra_serve_or_a_llama_server_is_marked_slow(
        suite: dict[str, dict[str, list[str]]]) -> None:
    missing = lacking(suite, "slow", lambda t: PROCESS_FIXTURES & set(t["fixtures"]) or "serve_lyra" in t["reaches"])
    assert not missing, unmarked("slow", missing)


def test_a_test_driving_a_browser_is_marked_slow(suite: dict[str, dict[str, list[str]]]) -> None:
    missing = lacking(suite, "slow", lambda t: "sync_playwright" in t["reaches"])
    assert not missing, unmarked("slow", missing)


def test_a_test_loading_the_models_without_a_fixture_is_marked_models(
        suite: dict[str, dict[str, list[str]]]) -> None:
    missing = lacking(suite, "models", lambda t: LOADS_MODELS & set(t["reaches"]))
    assert not [node for node in missing if node not in NOT_YET_MARKED], unmarked(
        "models", [node for node in missing if node not in NOT_YET_MARKED])
    assert sorted(NOT_YET_MARKED - set(missing)) == [], "marked (or gone) now: take these out of NOT_YET_MARKED"


def test_the_reading_sees_through_fixtures_and_helpers(suite: dict[str, dict[str, list[str]]]) -> None:
    """Not vacuous: a test that reaches `lyra serve` only through fixtures or another module's helper is seen."""
    ui = suite["tests/test_web_ui.py::test_enter_sends_and_shift_enter_makes_a_new_line"]  # page -> served -> start
    assert {"serve_lyra", "sync_playwright"} <= set(ui["reaches"])
    memory_ui = [t for node, t in suite.items() if node.startswith("tests/test_web_memory_ui.py::")]
    assert memory_ui and all("serve_lyra" in t["reaches"] for t in memory_ui)  # start, imported from test_web_ui
    assert suite["tests/test_bert_gguf.py::test_tensor_types_keep_f32_where_ggml_needs_it"]["reaches"] == ["EMBED_GGUF"]
    assert suite["tests/test_markers.py::test_the_reading_sees_through_fixtures_and_helpers"]["reaches"] == []
