"""An odd GGUF header is refused with the reader's own error, everywhere a model file is listed.

One file in ``models_dir`` with arrays nested thousands deep, a string for
``general.alignment`` or +inf for ``general.file_type`` made the header reader
raise RecursionError, ValueError or OverflowError: GET /api/models/files and
PUT /api/models/choice answered 500, ``lyra models list`` and ``lyra doctor``
printed a traceback. Here each such file is refused with ``ModelFileInvalid``
saying why, through the reader, the CLI and the API; and hypothesis mutates
valid headers (hand-written, and the real tiny models') to check that the
reader never raises anything else, nor hangs, nor takes memory.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from lyra_local.cli import main
from lyra_local.modelfiles.gguf_header import ModelFileInvalid, read_gguf

from .conftest import CHAT_GGUF, EMBED_GGUF, base_env, fake_client, require_file
from .gguf_bytes import gguf_file, kv_f64, kv_str, kv_u32, nested_array, valid_kvs
from .gguf_mutations import built_seeds, check_gguf, mutated, real_seed

# The three files of the defect: what each holds, and what the refusal must say.
DEFECTS: dict[str, tuple[Callable[[], list[bytes]], str]] = {
    "deep.gguf": (lambda: [*valid_kvs(), nested_array("tokenizer.ggml.merges", 5000)],
                  r"'tokenizer.ggml.merges' is an array of arrays, which llama.cpp does not read"),
    "alignment.gguf": (lambda: [*valid_kvs(), kv_str("general.alignment", "thirty-two")],
                       r"'general.alignment' is STRING, where llama.cpp reads a UINT32"),
    "file-type.gguf": (lambda: [kv_f64("general.file_type", math.inf) if b"general.file_type" in e else e
                                for e in valid_kvs()],
                       r"'general.file_type' is FLOAT64, where llama.cpp reads a UINT32"),
}
CONFIG = '[models.chat]\npath = "{chat}"\n[models.embed]\npath = "embed.gguf"\n'


def models_dir(root: Path) -> Path:
    """A models folder with the three odd files and a valid (hand-written) embedder."""
    folder = root / "models"
    folder.mkdir()
    for name, (kvs, _) in DEFECTS.items():
        gguf_file(folder / name, kvs())
    gguf_file(folder / "embed.gguf", [kv_str("general.architecture", "bert"), kv_u32("bert.pooling_type", 1)])
    return folder


@pytest.mark.parametrize("name", DEFECTS)
def test_each_odd_header_is_refused_with_the_readers_own_error(tmp_path: Path, name: str) -> None:
    kvs, says = DEFECTS[name]
    with pytest.raises(ModelFileInvalid, match=says) as refused:
        read_gguf(gguf_file(tmp_path / name, kvs()))
    assert refused.value.hint and str(tmp_path / name) in refused.value.message


def test_the_valid_hand_written_file_is_summed_up(tmp_path: Path) -> None:
    summary = read_gguf(gguf_file(tmp_path / "tiny.gguf"))
    assert (summary.architecture, summary.name, summary.quantization, summary.context_length) == \
        ("llama", "Tiny Test", "F32", 2048)
    assert summary.chat_template and summary.parameters == 32 and summary.tensors == 1


@pytest.mark.parametrize("name", DEFECTS)
def test_models_list_and_doctor_name_the_odd_file_without_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str) -> None:
    folder = models_dir(tmp_path)
    config = tmp_path / "lyra.toml"
    config.write_text(CONFIG.format(chat=name))
    for key, value in {**base_env(tmp_path), "LYRA_MODELS_DIR": str(folder),
                       "LYRA_DATA_DIR": str(tmp_path / "data")}.items():
        monkeypatch.setenv(key, value)
    assert main(["--config", str(config), "models", "list"]) == 1
    out, err = capsys.readouterr()
    assert f"chat     local   {folder / name} (BROKEN: {folder / name}: its metadata" in out
    assert "embed    local" in out and "bert" in out and f"models.chat: {folder / name}: its metadata" in err
    assert main(["--config", str(config), "doctor", "--no-load"]) == 1
    out, _ = capsys.readouterr()
    assert f"[FAIL] models.chat: {folder / name}: its metadata" in out
    assert "[FAIL] parser: " in out and "2 problem(s) found" in out  # the folder holds no parsing pipeline either


@pytest.mark.slow  # runs the `lyra` command as a person does
def test_the_lyra_command_prints_one_clear_line_and_no_traceback(tmp_path: Path) -> None:
    folder = models_dir(tmp_path)
    config = tmp_path / "lyra.toml"
    config.write_text(CONFIG.format(chat="deep.gguf"))
    env = {**base_env(tmp_path), "LYRA_MODELS_DIR": str(folder), "LYRA_DATA_DIR": str(tmp_path / "data")}
    for command in (["models", "list"], ["doctor", "--no-load"]):
        done = subprocess.run([sys.executable, "-m", "lyra_local", "--config", str(config), *command], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, done.stderr
        assert "is an array of arrays, which llama.cpp does not read" in done.stdout
        assert "Traceback" not in done.stdout + done.stderr


def test_the_model_files_api_lists_each_odd_file_with_why_and_a_choice_of_one_is_refused(
        tmp_path: Path, make_settings: Callable[..., object]) -> None:
    folder = models_dir(tmp_path)
    # models_dir in the file: a choice is checked against the file and the process's environment
    settings = make_settings(f'models_dir = "{folder}"\n' + CONFIG.format(chat="embed.gguf"),
                             LYRA_MODELS_DIR=str(folder))
    config = tmp_path / "lyra.toml"
    before = config.read_text()
    with fake_client(settings) as client:  # type: ignore[arg-type]
        listed = client.get("/api/models/files")
        assert listed.status_code == 200, listed.text
        files = {f["name"]: f for f in listed.json()["files"]}
        assert files["embed.gguf"]["problem"] is None and files["embed.gguf"]["role_hint"] == "embed"
        for name in DEFECTS:
            assert "its metadata" in files[name]["problem"] and "llama.cpp" in files[name]["problem"]
            chosen = client.put("/api/models/choice", json={"roles": {"chat": {"file": name}}})
            assert chosen.status_code == 400, chosen.text
            assert "its metadata" in chosen.json()["error"]["message"]
    assert config.read_text() == before


# The fuzz: a small fixed budget here, the same property for minutes in scripts/fuzz_gguf.py.
FUZZ = settings(max_examples=250, derandomize=True, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(case=mutated(built_seeds()))
def test_a_mutated_hand_written_header_gives_a_summary_or_the_readers_error(
        tmp_path_factory: pytest.TempPathFactory, case: tuple[bytes, int, list[str]]) -> None:
    data, size, _ = case
    check_gguf(tmp_path_factory.getbasetemp() / "fuzz.gguf", data, size)


@pytest.mark.models  # reads the default models' headers (loads no model)
def test_a_mutated_real_header_gives_a_summary_or_the_readers_error(tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.getbasetemp() / "fuzz-real.gguf"
    chat, embed = real_seed(require_file(CHAT_GGUF)), real_seed(require_file(EMBED_GGUF))
    for seed in (chat, embed):  # unmutated, each is whole and read as the model it is, in little memory
        summary = check_gguf(path, seed.head, seed.size)
        assert summary is not None and summary.tensors in (101, 272)

    @settings(max_examples=150, derandomize=True, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(case=mutated([embed]))  # the smaller header (636 kB): scripts/fuzz.py mutates both
    def mutate(case: tuple[bytes, int, list[str]]) -> None:
        check_gguf(path, case[0], case[1], trace=False)

    mutate()


def test_a_file_removed_while_the_folder_is_listed_is_listed_as_unreadable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lyra_local.modelfiles import on_disk

    folder = models_dir(tmp_path)

    def removed_meanwhile(path: Path) -> object:  # a person deleting the file as the Settings page loads
        path.unlink()
        return read_gguf(path)

    monkeypatch.setattr(on_disk, "read_gguf", removed_meanwhile)
    entries = {e.name: e for e in on_disk.model_files(folder)}  # FileNotFoundError from its size, before
    assert entries["embed.gguf"].size == 0 and "cannot read" in (entries["embed.gguf"].problem or "")
