"""A GGUF file summed up from its header, and a broken one refused with the reason, before llama.cpp meets it."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from lyra_local.modelfiles.gguf_header import ModelFileInvalid, read_gguf

from .conftest import CHAT_GGUF, EMBED_GGUF, require_file

pytestmark = pytest.mark.models  # reads the default models' files (loads no model)


def test_the_default_models_are_summed_up_from_their_headers() -> None:
    chat = read_gguf(require_file(CHAT_GGUF))
    assert (chat.architecture, chat.quantization, chat.context_length, chat.chat_template) == \
        ("llama", "Q4_1", 8192, True)
    assert 130e6 < chat.parameters < 140e6 and chat.role_hint == "chat" and chat.size == CHAT_GGUF.stat().st_size
    embed = read_gguf(require_file(EMBED_GGUF))
    assert (embed.architecture, embed.quantization, embed.pooling, embed.role_hint) == ("bert", "F16", "MEAN", "embed")
    assert embed.context_length == 512 and not embed.chat_template and embed.tensors == 101


def cut(source: Path, to: Path, keep: int) -> Path:
    with source.open("rb") as whole:
        to.write_bytes(whole.read(keep))
    return to


def test_a_download_cut_short_is_refused_with_where_it_ends(tmp_path: Path) -> None:
    source = require_file(EMBED_GGUF)
    size = source.stat().st_size
    with pytest.raises(ModelFileInvalid, match=r"is incomplete: tensor .* ends at byte [\d,]+ of a [\d,]+-byte file"):
        read_gguf(cut(source, tmp_path / "short.gguf", size - 1))
    with pytest.raises(ModelFileInvalid, match="is incomplete: the file ends inside its header"):
        read_gguf(cut(source, tmp_path / "header.gguf", 2000))


def test_a_file_that_is_not_gguf_says_so(tmp_path: Path) -> None:
    html = tmp_path / "model.gguf"
    html.write_text("<!DOCTYPE html><html><body>404 Not Found</body></html>")
    with pytest.raises(ModelFileInvalid, match="is not a GGUF model file") as caught:
        read_gguf(html)
    assert caught.value.hint and "gguf" in caught.value.hint.lower()
    tiny = tmp_path / "tiny.gguf"
    tiny.write_bytes(b"GGUF")
    with pytest.raises(ModelFileInvalid, match=r"not a GGUF model file \(4 bytes\)"):
        read_gguf(tiny)
    with pytest.raises(ModelFileInvalid, match="cannot read"):
        read_gguf(tmp_path / "absent.gguf")


def test_a_version_or_header_llama_cpp_cannot_read_is_refused(tmp_path: Path) -> None:
    data = bytearray(require_file(EMBED_GGUF).read_bytes()[:4096])
    future = tmp_path / "future.gguf"
    future.write_bytes(data[:4] + struct.pack("<I", 9) + data[8:])
    with pytest.raises(ModelFileInvalid, match="is GGUF version 9"):
        read_gguf(future)
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(data[:8] + struct.pack("<QQ", 1 << 40, 3) + data[24:])
    with pytest.raises(ModelFileInvalid, match="which no model has"):
        read_gguf(garbage)


def test_the_model_files_api_lists_each_gguf_with_what_it_is_and_who_uses_it(make_settings, tmp_path: Path) -> None:
    from .conftest import fake_client

    models = tmp_path / "models"
    models.mkdir()
    (models / "chat.gguf").symlink_to(require_file(CHAT_GGUF))
    (models / "embed.gguf").symlink_to(require_file(EMBED_GGUF))
    cut(EMBED_GGUF, models / "half.gguf", 5_000_000)
    (models / "notes.txt").write_text("not a model")
    (models / "next.gguf.partial").write_bytes(b"GGUF")
    settings = make_settings('[models.chat]\npath = "chat.gguf"\n[models.embed]\npath = "embed.gguf"\n',
                             LYRA_MODELS_DIR=str(models))
    with fake_client(settings) as client:
        body = client.get("/api/models/files").json()
    assert body["models_dir"] == str(models)
    files = {f["name"]: f for f in body["files"]}
    assert list(files) == ["chat.gguf", "embed.gguf", "half.gguf"]
    assert files["chat.gguf"]["used_by"] == ["chat", "summary"] and files["chat.gguf"]["role_hint"] == "chat"
    assert files["chat.gguf"]["quantization"] == "Q4_1" and files["chat.gguf"]["problem"] is None
    assert files["embed.gguf"]["role_hint"] == "embed" and files["embed.gguf"]["pooling"] == "MEAN"
    assert "is incomplete" in files["half.gguf"]["problem"] and files["half.gguf"]["used_by"] == []
