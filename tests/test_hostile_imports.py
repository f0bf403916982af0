"""Import files no exporter wrote: mutated Lyra JSON Lines and ChatGPT exports, zip bombs.

Property-based (hypothesis), on the real importer, store and readers with the
fake embedder. Whatever a file holds, the import either refuses the whole file
with an ``ImportFormatError`` (nothing imported) or imports every readable
conversation whole and names each part it could not read; it never raises
anything else, and the valid conversations beside a broken one are stored
exactly, their times in the store's UTC form.
"""

from __future__ import annotations

import copy
import json
import time
import tracemalloc
import zipfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lyra_local.store import Store
from lyra_local.store.db import to_iso
from lyra_local.textsafe import well_formed
from lyra_local.transfer.chatgpt import read_chatgpt
from lyra_local.transfer.importer import import_conversations, import_source
from lyra_local.transfer.records import ImportFormatError
from lyra_local.transfer.sources import open_source

from .chatgpt_export import T0, conversation, message, write_export
from .conftest import fake_client
from .fakes import FakeEmbedder
from .import_mutations import paths_in
from .test_hostile_input import TEXT, isolated_settings

JSON = st.recursive(st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=6)
MOMENTS = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2100, 1, 1),
                       timezones=st.sampled_from([timezone.utc, timezone.min, timezone.max]))
SHAPES = ["extended", "naive", "compact", "zulu"]
BAD_TIMES = ["soon", "", "2023-13-45", "yesterday", "0001-01-01T00:00:00+05:00", "9" * 100, 1683553000, None]
# A fresh store per example: a property about one file, not about what earlier examples left.
PER_EXAMPLE = settings(max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture])


def shaped(moment: datetime, shape: str) -> tuple[str, str]:
    """``moment`` written as some exporter might, and the store's UTC text for it."""
    utc = to_iso(moment)
    if shape == "naive":
        naive = moment.astimezone(timezone.utc).replace(tzinfo=None)
        return naive.isoformat(), utc
    if shape == "compact":
        return moment.strftime("%Y%m%dT%H%M%S.%f%z"), utc
    if shape == "zulu":
        return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"), utc
    return moment.isoformat(), utc


@st.composite
def lyra_session(draw: st.DrawFn, uid: str) -> tuple[dict[str, Any], list[tuple[str, str, str]]]:
    """A valid session line with hostile text and mixed time formats, and what the store must hold."""
    messages, expected = [], []
    for _ in range(draw(st.integers(1, 4))):
        role, text = draw(st.sampled_from(["user", "assistant"])), draw(TEXT)
        written, utc = shaped(draw(MOMENTS), draw(st.sampled_from(SHAPES)))
        messages.append({"role": role, "content": text, "created_at": written})
        expected.append((role, well_formed(text), utc))
    return {"id": uid, "name": draw(TEXT), "messages": messages}, expected


@st.composite
def broken_line(draw: st.DrawFn, valid: dict[str, Any]) -> str:
    """A line that must be reported, never imported: a valid session with one thing broken, or noise."""
    kind = draw(st.sampled_from(["no id", "messages", "role", "time", "content", "cut", "digits", "deep", "json",
                                 "text"]))
    line = copy.deepcopy(valid)
    if kind == "no id":
        del line["id"]
    elif kind == "messages":
        line["messages"] = draw(st.none() | st.text(max_size=5) | st.integers() | st.dictionaries(st.text(), JSON))
    elif kind == "role":
        line["messages"][0]["role"] = draw(JSON.filter(lambda r: r not in ("user", "assistant")))
    elif kind == "time":
        line["messages"][-1]["created_at"] = draw(st.sampled_from(BAD_TIMES))
    elif kind == "content":
        line["messages"][0]["content"] = draw(JSON.filter(lambda c: not isinstance(c, str)))
    elif kind == "cut":
        text = json.dumps(line)
        return text[:draw(st.integers(1, len(text) - 1))]
    elif kind == "digits":
        return '{"id": "x", "messages": [], "n": ' + "9" * 5000 + "}"
    elif kind == "deep":
        return "[" * 100_000
    elif kind == "json":
        return json.dumps(draw(JSON.filter(lambda v: not isinstance(v, dict) or "messages" not in v)))
    else:
        return "".join(draw(st.text(min_size=1, max_size=40).filter(str.strip))).replace("\n", " ").replace("\r", " ")
    return dumps(line, draw(st.booleans()))


@st.composite
def jsonl_file(draw: st.DrawFn) -> tuple[list[str], dict[str, list[tuple[str, str, str]]], int]:
    """Lines (the first always a valid session), the sessions expected, and how many lines are broken."""
    lines, expected, broken = [], {}, 0
    for i in range(draw(st.integers(1, 6))):
        session, wanted = draw(lyra_session(f"s-{i}"))
        lines.append(dumps(session, draw(st.booleans())))
        expected[session["id"]] = wanted
        for _ in range(draw(st.integers(0, 2)) if i else 0):
            lines.append(draw(broken_line(session)))
            broken += 1
    return lines, expected, broken


def dumps(value: Any, ascii_only: bool) -> str:
    """A JSON line as an exporter may write it: escaped, or raw UTF-8 where UTF-8 can hold the text."""
    raw = json.dumps(value, ensure_ascii=False)
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only its escape can be written
        return json.dumps(value)
    return json.dumps(value) if ascii_only else raw


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@PER_EXAMPLE
@given(case=jsonl_file())
def test_any_lyra_jsonl_imports_every_valid_session_and_names_every_broken_line(
        tmp_path_factory: pytest.TempPathFactory, case: tuple[list[str], dict[str, Any], int]) -> None:
    lines, expected, broken = case
    tmp = tmp_path_factory.mktemp("jsonl")
    store = Store(tmp / "data")
    try:
        report = import_conversations(store, FakeEmbedder(), open_source(write_lines(tmp / "s.jsonl", lines)).read())
        assert report.sessions_new == len(expected) and len(report.problems) == broken, report.problems
        for uid, wanted in expected.items():
            session = store.sessions.find(uid=uid)
            assert session is not None
            got = [(e.role, e.content, e.created_at) for e in store.exchanges.history(session.id)]
            assert got == wanted
            assert session.created_at == wanted[0][2]
    finally:
        store.close()


def test_a_bad_time_is_named_with_its_message(tmp_path: Path, store: Store) -> None:
    line = {"id": "s", "messages": [{"role": "user", "content": "a", "created_at": "2023-05-08"},
                                    {"role": "user", "content": "b", "created_at": "next tuesday"}]}
    report = import_conversations(store, FakeEmbedder(), open_source(
        write_lines(tmp_path / "s.jsonl", [json.dumps({**line, "id": "ok", "messages": line["messages"][:1]}),
                                           json.dumps(line)])).read())
    assert [str(p) for p in report.problems] == [
        "s.jsonl line 2: message 2: created_at 'next tuesday' is not a time (expected ISO 8601, such as "
        "2023-05-08T13:56:00Z)"]
    session = store.sessions.find(uid="ok")
    assert session is not None and session.created_at == "2023-05-08T00:00:00.000000+00:00"  # a date alone


# -- ChatGPT exports with anything anywhere -----------------------------------------------------------

def chatgpt_conversation(i: int, texts: list[str]) -> tuple[dict[str, Any], list[str]]:
    turns = [("user" if j % 2 == 0 else "assistant", t) for j, t in enumerate(texts)]
    return conversation(f"c{i}", f"chat {i}", turns, start=T0 + 86_400 * i), [well_formed(t) for t in texts]


def replace_at(value: Any, path: tuple[Any, ...], new: Any) -> None:
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = new


@PER_EXAMPLE
@given(data=st.data())
def test_any_mutated_chatgpt_export_imports_the_intact_conversations(
        tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    convs, texts = [], []
    for i in range(data.draw(st.integers(2, 5), label="conversations")):
        conv, kept = chatgpt_conversation(i, data.draw(st.lists(TEXT.filter(str.strip), min_size=1, max_size=3)))
        convs.append(conv)
        texts.append(kept)
    mutated = set(data.draw(st.sets(st.integers(1, len(convs) - 1), max_size=len(convs) - 1), label="mutated"))
    for i in mutated:
        for _ in range(data.draw(st.integers(1, 3))):
            path = data.draw(st.sampled_from(paths_in(convs[i])[1:]), label="path")
            replace_at(convs[i], path, data.draw(JSON | st.sampled_from([float("inf"), float("nan"), 1e300, True,
                                                                        -5, [], "c0", "root"]), label="value"))
    tmp = tmp_path_factory.mktemp("chatgpt")
    export = tmp / "conversations.json"
    export.write_text(json.dumps(convs), encoding="utf-8")
    store = Store(tmp / "data")
    try:
        report = import_conversations(store, FakeEmbedder(), read_chatgpt(export))
        assert report.sessions_new + len(report.problems) == len(convs), report.problems
        for i, kept in enumerate(texts):
            if i not in mutated:
                session = store.sessions.find(source="chatgpt", source_id=f"c{i}")
                assert session is not None, report.problems
                assert [e.content for e in store.exchanges.history(session.id)] == kept
    finally:
        store.close()


@pytest.mark.parametrize("breakage", ["loop", "missing parent", "current is a list", "message is text",
                                      "author is a list", "parts is text", "times out of range", "id is a dict",
                                      "mapping is a list"])
def test_each_odd_shape_is_one_named_problem(tmp_path: Path, store: Store, breakage: str) -> None:
    good, _ = chatgpt_conversation(0, ["hello there"])
    bad, _ = chatgpt_conversation(1, ["first", "second"])
    node = "c1-m1"
    if breakage == "loop":
        bad["mapping"]["c1-m0"]["parent"] = node
    elif breakage == "missing parent":
        bad["mapping"][node]["parent"] = "nowhere"
    elif breakage == "current is a list":
        bad["current_node"] = [node]
    elif breakage == "message is text":
        bad["mapping"][node]["message"] = "hi"
    elif breakage == "author is a list":
        bad["mapping"][node]["message"]["author"] = ["user"]
    elif breakage == "parts is text":
        bad["mapping"][node]["message"]["content"]["parts"] = "just text"
    elif breakage == "times out of range":
        bad["create_time"] = bad["update_time"] = float("inf")
        for n in ("c1-m0", node):
            bad["mapping"][n]["message"]["create_time"] = 1e300
    elif breakage == "id is a dict":
        bad["conversation_id"] = bad["id"] = {"x": 1}
    else:
        bad["mapping"] = [bad["mapping"]]
    export = write_export(tmp_path / "export.zip", [good, bad])
    report = import_conversations(store, FakeEmbedder(), read_chatgpt(export))
    if breakage in ("author is a list", "parts is text"):  # that one message is skipped and counted
        assert report.sessions_new == 2 and report.messages == 2 and not report.problems
        assert sum(report.skipped.values()) == 3  # the two hidden system roots, and it
    else:
        assert report.sessions_new == 1 and len(report.problems) == 1
        assert str(report.problems[0]).startswith("conversation 2 "), report.problems


def test_the_imported_chatgpt_times_are_the_stores_utc_text(tmp_path: Path, store: Store) -> None:
    conv, _ = chatgpt_conversation(0, ["hello", "hi"])
    import_conversations(store, FakeEmbedder(), read_chatgpt(write_export(tmp_path / "e.zip", [conv])))
    session = store.sessions.find(source="chatgpt", source_id="c0")
    assert session is not None and session.created_at == to_iso(datetime.fromtimestamp(T0, timezone.utc))
    assert [e.created_at for e in store.exchanges.history(session.id)] == [
        to_iso(datetime.fromtimestamp(T0 + 60 * j, timezone.utc)) for j in range(2)]


# -- zip bombs ---------------------------------------------------------------------------------------

def bomb(path: Path, member: str, megabytes: int = 200, beside: dict[str, str] | None = None) -> Path:
    """A zip holding ``megabytes`` of zeros as ``member`` (about 200 KB on disk for 200 MB)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in (beside or {}).items():
            archive.writestr(name, text)
        with archive.open(member, "w", force_zip64=True) as out:
            block = b"\0" * 1024**2
            for _ in range(megabytes):
                out.write(block)
    return path


@pytest.mark.parametrize("member", ["conversations.json", "sessions.jsonl", "memory.json"])
def test_a_zip_bomb_is_refused_before_it_is_inflated(tmp_path: Path, store: Store, member: str) -> None:
    sessions = json.dumps({"id": "s", "messages": [{"role": "user", "content": "hi",
                                                    "created_at": "2023-05-08T13:56:00Z"}]})
    path = bomb(tmp_path / "export.zip", member, beside={} if member != "memory.json" else {"sessions.jsonl": sessions})
    assert path.stat().st_size < 1024**2
    tracemalloc.start()
    started = time.perf_counter()
    with pytest.raises(ImportFormatError) as refused:
        import_source(store, FakeEmbedder(), open_source(path))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert "zip bomb" in str(refused.value) and "nothing was imported" in str(refused.value)
    assert peak < 20 * 1024**2 and time.perf_counter() - started < 5  # checked, not inflated
    assert store.sessions.list() == []


def test_a_zip_bomb_uploaded_imports_nothing_and_says_why(tmp_path: Path) -> None:
    path = bomb(tmp_path / "export.zip", "conversations.json")
    with fake_client(isolated_settings(tmp_path)) as client:
        job = client.put("/api/import", params={"filename": "export.zip"}, content=path.read_bytes()).json()["job"]
        deadline = time.monotonic() + 30
        while (status := client.get(f"/api/import/{job}").json())["status"] == "running":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert status["status"] == "failed" and "zip bomb" in status["error"]
        assert client.get("/api/sessions").json()["sessions"] == []
        assert client.get("/health").status_code == 200


def test_an_ordinary_export_zip_still_imports(tmp_path: Path, store: Store) -> None:
    convs = [chatgpt_conversation(i, [f"message about the harbour number {i} " * 50])[0] for i in range(30)]
    report, _ = import_source(store, FakeEmbedder(), open_source(write_export(tmp_path / "e.zip", convs)))
    assert report.sessions_new == 30 and not report.problems


def test_an_image_only_last_batch_imports(tmp_path: Path, store: Store) -> None:
    text, _ = chatgpt_conversation(0, ["hello"])
    image = conversation("img", "a picture", [])
    image["mapping"]["img-m0"] = {"id": "img-m0", "parent": "sys", "children": [], "message": message(
        "img-m0", "user", [{"content_type": "image_asset_pointer", "asset_pointer": "file-service://x"}],
        at=T0, content_type="multimodal_text")}
    image["current_node"] = "img-m0"
    report = import_conversations(store, FakeEmbedder(), read_chatgpt(write_export(tmp_path / "e.zip", [text, image])),
                                  batch_messages=1)
    assert report.sessions_new == 2 and report.skipped["images"] == 1
