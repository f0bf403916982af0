"""Mutated import files for fuzzing the import parsers (``tests/test_import_fuzz.py``, ``scripts/fuzz_imports.py``).

The seeds are the four formats a person imports, small and valid
(``tests/data/fuzz/``): a ChatGPT export zip and its ``conversations.json``,
Lyra JSON Lines, and a Lyra export zip (``sessions.jsonl`` and
``memory.json``, written by the real exporter from a dreamed store). A
mutation changes the JSON where an exporter or a person could go wrong (a
value of another type, a huge number, nesting thousands deep, a long text),
or the bytes (flips, cuts, invalid UTF-8), or the zip (a member renamed,
doubled, named ``../outside``, stored or deflated, its bytes changed).

The property (``check_import``): the whole import, on the real store in a
fresh data directory with the fake embedder, reports or raises a
``LyraError``, nothing else; within five seconds; and writes nothing outside
that data directory (its sibling folder and the working directory stay as
they were).
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import time
import warnings
import zipfile
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from lyra_local.errors import LyraError
from lyra_local.store import Store
from lyra_local.transfer.importer import import_source
from lyra_local.transfer.sources import open_source

from .fakes import FakeEmbedder

CORPUS = Path(__file__).parent / "data" / "fuzz"
IMPORT_SEEDS = ("chatgpt-export.zip", "conversations.json", "sessions.jsonl", "lyra-export.zip")
MOST_SECONDS = 5.0
HOSTILE = [None, True, 0, -1, 1 << 70, 1e308, float("nan"), float("inf"), "", "x" * 10_000, "\ud800", [], {},
           [[[]]], {"": {}}, "2023-13-45", "../../etc/passwd", -(1 << 63), 1 << 63, 2**53 + 1]
# Written into the text by hand: json.dumps would refuse to nest this deep or write this many digits.
RAW = {"deep": "[" * 100_000 + "]" * 100_000, "digits": "9" * 5000, "deep-object": '{"a":' * 5000 + "1" + "}" * 5000,
       "just-parsed": "[" * 900 + "]" * 900, "at-the-limit": "[" * 985 + "]" * 985}  # read, then deep for str()


class Corpus(dict[str, bytes]):
    """Seed files by name, shown by their names (hypothesis prints a strategy's arguments on a failure)."""

    def __repr__(self) -> str:
        return f"Corpus({sorted(self)})"


def seeds(folder: Path = CORPUS) -> Corpus:
    return Corpus({name: (folder / name).read_bytes() for name in IMPORT_SEEDS})


def paths_in(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value a mutation can hit (also ``tests/test_hostile_imports.py``'s)."""
    out = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            out += paths_in(inner, (*prefix, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            out += paths_in(inner, (*prefix, i))
    return out


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    value[path[0]] = _replace(value[path[0]], path[1:], new)
    return value


@st.composite
def _json_mutation(draw: st.DrawFn, text: str, lines: bool) -> str:
    """One value of the JSON (or of one line) replaced by something hostile; or a key dropped."""
    rows = text.splitlines() if lines else [text]
    row = draw(st.integers(0, len(rows) - 1))
    data = json.loads(rows[row])
    path = draw(st.sampled_from(paths_in(data)))
    how = draw(st.sampled_from(["value", "value", "raw", "drop"]))
    if how == "drop" and path:
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]
        rows[row] = json.dumps(data)
    elif how == "raw":
        rows[row] = json.dumps(_replace(data, path, "\0RAW\0")).replace('"\\u0000RAW\\u0000"',
                                                                       RAW[draw(st.sampled_from(sorted(RAW)))])
    else:
        new = draw(st.sampled_from(HOSTILE) | st.integers() | st.floats() | st.text(max_size=20))
        rows[row] = json.dumps(_replace(data, path, new), ensure_ascii=draw(st.booleans()))
    return "\n".join(rows) + ("\n" if lines else "")


@st.composite
def _byte_mutation(draw: st.DrawFn, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(len(out) - 1, 0)))
        what = draw(st.sampled_from(["flip", "insert", "delete", "cut", "utf8"]))
        if what == "flip" and out:
            out[at] ^= draw(st.integers(1, 255))
        elif what == "insert":
            out[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif what == "utf8":
            out[at:at] = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\0"]))
        elif what == "delete":
            del out[at:at + draw(st.integers(1, 64))]
        else:
            del out[at:]
    return bytes(out)


def _members(data: bytes) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return [(info.filename, archive.read(info)) for info in archive.infolist()]


def _zipped(members: list[tuple[str, bytes]], method: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name": meant
        for name, body in members:
            archive.writestr(name, body)
    return buffer.getvalue()


@st.composite
def _zip_mutation(draw: st.DrawFn, data: bytes) -> bytes:
    members = _members(data)
    how = draw(st.sampled_from(["member", "member", "rename", "double", "outside", "drop", "bytes"]))
    i = draw(st.integers(0, len(members) - 1))
    name, body = members[i]
    if how == "member" and name.endswith((".json", ".jsonl")):
        members[i] = (name, draw(_text_mutation(body, name.endswith(".jsonl"))))
    elif how == "rename":
        members[i] = (draw(st.sampled_from(["x/" + name, name.upper(), "/" + name, name + "/", " " + name])), body)
    elif how == "double":  # two members of one name: which one a reader takes must not matter
        json_member = name.endswith((".json", ".jsonl"))
        members.append((name, draw(_text_mutation(body, name.endswith(".jsonl"))) if json_member else body))
    elif how == "outside":  # a member that would land outside wherever it is extracted
        members.append((draw(st.sampled_from(["../outside.txt", "/tmp/outside.txt", "a/../../outside.txt"])),
                        b"must not be written"))
    elif how == "drop":
        del members[i]
    zipped = _zipped(members, draw(st.sampled_from([zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])))
    return draw(_byte_mutation(zipped)) if how == "bytes" else zipped


@st.composite
def _text_mutation(draw: st.DrawFn, data: bytes, lines: bool) -> bytes:
    if draw(st.booleans()):
        return draw(_json_mutation(data.decode("utf-8"), lines)).encode("utf-8", "surrogatepass")
    return draw(_byte_mutation(data))


@st.composite
def mutated_import(draw: st.DrawFn, corpus: dict[str, bytes]) -> tuple[str, bytes, str]:
    """(file name, its bytes, the format asked for) from one seed of ``corpus``, mutated."""
    name = draw(st.sampled_from(sorted(corpus)))
    data = corpus[name]
    if name.endswith(".zip"):
        data = draw(_zip_mutation(data))
    else:
        data = draw(_text_mutation(data, name.endswith(".jsonl")))
    return name, data, draw(st.sampled_from(["auto", "auto", "chatgpt", "lyra"]))


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file() or p.is_symlink()}


def check_import(name: str, data: bytes, fmt: str) -> str:
    """The property, in a fresh folder: ``home/input/NAME`` imported into ``home/data``; returns what happened
    ("imported ...", or the LyraError's type)."""
    with tempfile.TemporaryDirectory(prefix="lyra-fuzz-") as tmp:
        home = Path(tmp)
        (home / "input").mkdir()
        (home / "cwd").mkdir()
        (home / "input" / name).write_bytes(data)
        before = {part: _tree(home / part) for part in ("input", "cwd")}
        cwd = os.getcwd()
        os.chdir(home / "cwd")
        store = Store(home / "data")
        started = time.perf_counter()
        try:
            report, _ = import_source(store, FakeEmbedder(), open_source(home / "input" / name, fmt))  # type: ignore[arg-type]
            outcome = f"imported {report.messages} message(s), {len(report.problems)} problem(s)"
        except LyraError as exc:
            outcome = type(exc).__name__
            assert exc.message
        finally:
            seconds = time.perf_counter() - started
            store.close()
            os.chdir(cwd)
        assert seconds < MOST_SECONDS, f"the import took {seconds:.1f} s"
        assert {part: _tree(home / part) for part in ("input", "cwd")} == before, "a file was written outside"
        assert sorted(p.name for p in home.iterdir()) == ["cwd", "data", "input"], "a file was written outside"
        assert not (home.parent / "outside.txt").exists()
        return outcome
