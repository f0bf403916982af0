"""The English parser (lyra_local/parser.py): the real pipeline from models/, loaded once, refused when it is missing
or is not the verified one."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from lyra_local.errors import LyraError, ParserUnavailable
from lyra_local.modelfiles.fetch import PARSER
from lyra_local.parser import RECENT, Parser, load_parser, pipeline_problem

from .conftest import MODELS_DIR, PARSER_DIR, require_file


def linked_copy(tmp_path: Path) -> Path:
    """A models dir holding hard links to the fetched pipeline's files (no copy of 15 MB)."""
    models = tmp_path / "models"
    shutil.copytree(require_file(PARSER_DIR / "config.cfg").parent, models / PARSER.filename, copy_function=os.link)
    return models


def test_the_real_pipeline_parses_a_job_as_the_attribute_of_the_verb(parser: Parser) -> None:
    doc = parser("i'm a nurse at st james hospital")
    nurse = next(t for t in doc if t.text == "nurse")
    assert (nurse.dep_, nurse.head.text) == ("attr", "'m")
    assert next(t for t in doc if t.text == "i").dep_ == "nsubj"
    assert [(e.text, e.label_) for e in parser("Sam moved to Leeds with Tom in September.").ents] == [
        ("Sam", "PERSON"), ("Leeds", "GPE"), ("Tom", "PERSON"), ("September", "DATE")]


def test_it_is_loaded_once_per_models_dir_and_keeps_recent_parses(parser: Parser) -> None:
    assert load_parser(MODELS_DIR) is parser
    assert load_parser(MODELS_DIR / ".." / MODELS_DIR.name) is parser  # the same folder, spelled otherwise
    text = "my sister is a nurse"
    assert parser(text) is parser(text)  # one parse shared by the readers of a turn
    batch = ["we have a dog", text, "we have a dog", "I'm not a chef"]
    docs = parser.pipe(batch)
    assert [d.text for d in docs] == batch and docs[0] is docs[2] and docs[1] is parser(text)
    first = parser("the oldest of them")
    parser.pipe(f"sentence number {i}" for i in range(RECENT))
    assert parser("the oldest of them") is not first  # only the last RECENT are kept
    assert [t.dep_ for t in parser("the oldest of them")] == [t.dep_ for t in first]


@pytest.mark.models
def test_threads_share_one_load(tmp_path: Path) -> None:
    models = linked_copy(tmp_path)
    got: list[Parser] = []
    threads = [threading.Thread(target=lambda: got.append(load_parser(models))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 4 and all(p is got[0] for p in got)
    assert got[0].path == models.resolve() / PARSER.filename and got[0] is not load_parser(MODELS_DIR)


def test_a_missing_pipeline_says_to_fetch(tmp_path: Path) -> None:
    with pytest.raises(ParserUnavailable, match="en_core_web_sm 3.8.0.* is missing") as caught:
        load_parser(tmp_path)
    assert isinstance(caught.value, LyraError) and "lyra models fetch" in str(caught.value.hint)
    assert pipeline_problem(tmp_path) == caught.value.message


@pytest.mark.models
def test_a_changed_pipeline_is_refused(tmp_path: Path) -> None:
    models = linked_copy(tmp_path)
    assert pipeline_problem(models) is None
    meta = models / PARSER.filename / "meta.json"
    text = meta.read_text()
    meta.unlink()  # break the hard link before writing
    meta.write_text(text.replace('"version":"3.8.0"', '"version":"3.8.1"', 1))
    assert meta.read_text() != text
    with pytest.raises(ParserUnavailable, match="is not the verified en_core_web_sm 3.8.0") as caught:
        load_parser(models)
    assert "lyra models fetch" in str(caught.value.hint)
    meta.write_text(text)
    (models / PARSER.filename / "extra.bin").write_bytes(b"a file the pin does not know")
    assert pipeline_problem(models) is not None
