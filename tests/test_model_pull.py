"""`lyra models pull`: the real tiny GGUFs served by a local Hugging Face (tests/hf_server.py), with faults.

What a pull must do: show progress; a pull killed half-way and resumed (the server saw the
Range request) to a file whose sha256 matches; a corrupted byte refused with nothing under models/ but the
partial state, which the next pull resumes or removes; an HTML page refused; too little disk space refused
before a byte is fetched; no network (and HF_HUB_OFFLINE) → the clear message and a non-zero exit.

Every test points HF_ENDPOINT at the local server (or a closed port) and HF_HOME at a temporary folder: nothing
reaches the internet or the person's cache. The files are copies of models/*.gguf in a temporary folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import constants as hf_constants

from lyra_local.cli import main
from lyra_local.llm.registry import catalog_ctx
from lyra_local.modelfiles import devices, fit
from lyra_local.modelfiles import pull as pull_module
from lyra_local.modelfiles.catalog import PullTarget, load_catalog
from lyra_local.modelfiles.fetch import MANIFEST
from lyra_local.modelfiles.on_disk import model_files
from lyra_local.modelfiles.pull import (
    STAGING,
    AlreadyPulling,
    ChecksumMismatch,
    NoConnection,
    NotAGGUF,
    NotEnoughSpace,
    PullCancelled,
    PullError,
    discard,
    partial_files,
    pull,
)
from lyra_local.modelfiles.pull_stream import Progress

from .conftest import CHAT_GGUF, EMBED_GGUF, REPO, base_env, free_port, require_file
from .hf_server import HFServer, Served

pytestmark = pytest.mark.models  # reads the real tiny GGUFs in models/

CHAT_REPO, EMBED_REPO = "lyra-test/SmolLM2-135M-Instruct-GGUF", "lyra-test/all-MiniLM-L6-v2-GGUF"
MIB = 1 << 20


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny models copied once into a temporary folder: the server serves the copies."""
    folder = tmp_path_factory.mktemp("served")
    return {kind: Path(shutil.copy2(require_file(path), folder / path.name))
            for kind, path in (("chat", CHAT_GGUF), ("embed", EMBED_GGUF))}


@pytest.fixture(autouse=True)
def private_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    private_hub_settings(tmp_path, monkeypatch)


def private_hub_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No token, cache or offline switch of the person's: huggingface_hub read some at its import, so its
    constants are set here too, not only the environment (a subprocess reads the environment afresh)."""
    home = tmp_path / "hf-home"
    monkeypatch.setenv("HF_HOME", str(home))
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(home / "token"))
    monkeypatch.setattr(hf_constants, "HF_STORED_TOKENS_PATH", str(home / "stored_tokens"))


@pytest.fixture
def hf(copies: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[HFServer]:
    with HFServer() as server:
        server.add(CHAT_REPO, copies["chat"].name, copies["chat"])
        server.add(EMBED_REPO, copies["embed"].name, copies["embed"])
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


def hosted(hf: HFServer, repo: str) -> Served:
    return next(f for f in hf._files.values() if f.repo == repo)


def target_of(file: Served, *, sha256: str | None = None, size: int | None = None) -> PullTarget:
    return PullTarget(file.repo, file.path, "main", sha256, size, None)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def models_listing(models_dir: Path) -> list[str]:
    """What the model list sees (``*.gguf`` directly in models_dir) and any stray file there."""
    return sorted(p.name for p in models_dir.iterdir() if p.name not in (STAGING, MANIFEST))


def test_pull_reports_progress_and_verifies(hf: HFServer, tmp_path: Path) -> None:
    embed = hosted(hf, EMBED_REPO)
    models_dir = tmp_path / "models"
    seen: list[Progress] = []

    path = pull(target_of(embed), models_dir, progress=seen.append)

    assert path == models_dir / embed.path and sha256_of(path) == embed.sha256
    assert [f.name for f in model_files(models_dir)] == [embed.path]  # a model the list shows, header read
    assert partial_files(models_dir, embed.path) == []
    assert seen[0].done == 0 and seen[-1].done == seen[-1].total == embed.size
    assert [p.done for p in seen] == sorted(p.done for p in seen) and len(seen) >= 3
    assert seen[-1].rate > 0 and seen[-1].eta_s == 0
    assert any(p.eta_s and p.eta_s > 0 for p in seen[1:-1])
    recorded = json.loads((models_dir / MANIFEST).read_text())[embed.path]
    assert recorded["sha256"] == embed.sha256 and recorded["repo"] == EMBED_REPO


def test_file_already_there_is_not_downloaded_again(hf: HFServer, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    embed = hosted(hf, EMBED_REPO)
    models_dir = tmp_path / "models"
    pull(target_of(embed), models_dir)
    gets = len(hf.gets())
    # recorded by the first pull: no request at all, even with the server gone
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    assert pull(target_of(embed), models_dir) == models_dir / embed.path
    # a file put there by hand, with the catalog's sha256: nothing asked either
    by_hand = tmp_path / "by-hand"
    by_hand.mkdir()
    shutil.copy2(embed.source, by_hand / embed.path)
    assert pull(target_of(embed, sha256=embed.sha256), by_hand) == by_hand / embed.path
    assert len(hf.gets()) == gets
    # by hand without a known sha256: the server's LFS hash is asked (a HEAD), the file is not fetched
    monkeypatch.setenv("HF_ENDPOINT", hf.url)
    (by_hand / MANIFEST).unlink(missing_ok=True)
    heads = sum(1 for r in hf.requests if r.method == "HEAD")
    assert pull(target_of(embed), by_hand) == by_hand / embed.path
    assert sum(1 for r in hf.requests if r.method == "HEAD") == heads + 1 and len(hf.gets()) == gets


def test_another_file_under_the_same_name_is_not_overwritten(hf: HFServer, tmp_path: Path) -> None:
    embed, chat = hosted(hf, EMBED_REPO), hosted(hf, CHAT_REPO)
    models_dir = tmp_path / "models"
    models_dir.mkdir()
    shutil.copy2(chat.source, models_dir / embed.path)  # some other model under this name
    with pytest.raises(PullError, match="exists and is not the file asked for"):
        pull(target_of(embed), models_dir)
    assert sha256_of(models_dir / embed.path) == chat.sha256 and hf.gets() == []


def test_a_dropped_connection_resumes_with_a_range_request(hf: HFServer, tmp_path: Path) -> None:
    chat = hosted(hf, CHAT_REPO)
    hf.faults.stop_after = 25 * MIB  # the connection closes mid-body, once

    path = pull(target_of(chat), tmp_path / "models")

    assert sha256_of(path) == chat.sha256
    assert len(hf.gets()) == 2 and hf.ranges() and hf.ranges()[0].startswith("bytes=")
    assert int(hf.ranges()[0].removeprefix("bytes=").rstrip("-")) > 0


def cancelled_at(done: int, file: Served, models_dir: Path) -> tuple[PullCancelled, Path]:
    """A pull of ``file`` cancelled once ``done`` bytes came: its error, and the one partial file it kept."""
    cancel = threading.Event()

    def stop(now: Progress) -> None:
        if now.done >= done:
            cancel.set()

    with pytest.raises(PullCancelled, match="partial file is kept") as stopped:
        pull(target_of(file), models_dir, progress=stop, cancel=cancel)
    [partial] = partial_files(models_dir, file.path)
    return stopped.value, partial


def test_cancel_keeps_the_partial_which_the_next_pull_resumes(hf: HFServer, tmp_path: Path) -> None:
    chat = hosted(hf, CHAT_REPO)
    models_dir = tmp_path / "models"
    stopped, partial = cancelled_at(20 * MIB, chat, models_dir)
    assert "pull it again" in (stopped.hint or "")
    kept = partial.stat().st_size
    assert 0 < kept < chat.size and models_listing(models_dir) == []

    path = pull(target_of(chat), models_dir)

    assert sha256_of(path) == chat.sha256 and hf.ranges() == [f"bytes={kept}-"]
    assert partial_files(models_dir, chat.path) == []


def pull_in_thread(target: PullTarget, models_dir: Path, cancel: threading.Event | None = None,
                   ) -> tuple[threading.Thread, list[BaseException]]:
    failed: list[BaseException] = []

    def run() -> None:
        try:
            pull(target, models_dir, cancel=cancel)
        except BaseException as exc:  # handed to the test
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, failed


def test_a_second_pull_of_the_same_file_is_refused_while_the_first_runs(hf: HFServer, tmp_path: Path) -> None:
    chat = hosted(hf, CHAT_REPO)
    models_dir = tmp_path / "models"
    hf.hold(20 * MIB)
    first, failed = pull_in_thread(target_of(chat), models_dir)
    assert hf.held.wait(30)
    with pytest.raises(AlreadyPulling, match="being downloaded by another pull"):
        pull(target_of(chat), models_dir)
    hf.release()
    first.join(60)
    assert not first.is_alive() and failed == [] and sha256_of(models_dir / chat.path) == chat.sha256


def test_the_network_gone_mid_download_keeps_the_partial(hf: HFServer, tmp_path: Path) -> None:
    """The server goes away half-way: huggingface_hub retries (about 5 s), then the pull says so and keeps what
    it has; a later pull resumes it."""
    chat = hosted(hf, CHAT_REPO)
    models_dir = tmp_path / "models"
    hf.hold(30 * MIB)
    thread, failed = pull_in_thread(target_of(chat), models_dir)
    assert hf.held.wait(30)
    hf.stop()
    thread.join(60)
    assert not thread.is_alive()
    [error] = failed
    assert isinstance(error, NoConnection) and "the partial file is kept" in error.message
    [partial] = partial_files(models_dir, chat.path)
    kept = partial.stat().st_size
    assert kept >= 20 * MIB and models_listing(models_dir) == []
    with HFServer() as back:
        back.add(CHAT_REPO, chat.path, chat.source)
        path = pull(target_of(chat), models_dir, endpoint=back.url)
        assert sha256_of(path) == chat.sha256 and back.ranges() == [f"bytes={kept}-"]


def test_cancel_during_a_stalled_transfer_ends_cancelled_not_as_a_lost_connection(hf: HFServer,
                                                                                 tmp_path: Path) -> None:
    """Cancel is seen between two chunks: a transfer that stalls, then fails, was still stopped by the person."""
    chat = hosted(hf, CHAT_REPO)
    models_dir = tmp_path / "models"
    cancel = threading.Event()
    hf.hold(20 * MIB)
    thread, failed = pull_in_thread(target_of(chat), models_dir, cancel)
    assert hf.held.wait(30)
    cancel.set()
    hf.stop()  # no chunk comes again: the transfer ends on a connection error
    thread.join(60)
    assert not thread.is_alive()
    [error] = failed
    assert isinstance(error, PullCancelled) and "partial file is" in error.message
    assert partial_files(models_dir, chat.path) and models_listing(models_dir) == []


def test_a_pull_leaves_the_partial_of_a_longer_named_file_alone(hf: HFServer, tmp_path: Path) -> None:
    """``X.gguf``'s partials are ``X.gguf.<sha>.partial``: ``X.gguf.extra.gguf``'s partial is another file's."""
    chat = hosted(hf, CHAT_REPO)
    staging = tmp_path / "models" / STAGING
    staging.mkdir(parents=True)
    other = staging / f"{chat.path}.Q8_0.gguf.{'0' * 16}.partial"
    other.write_bytes(b"GGUF" + bytes(100))
    stale = staging / f"{chat.path}.{'0' * 16}.partial"  # this file's, of another version: never resumable
    stale.write_bytes(b"GGUF" + bytes(100))
    assert partial_files(tmp_path / "models", chat.path) == [stale]

    pull(target_of(chat), tmp_path / "models")

    assert other.is_file() and not stale.exists()


def test_discard_frees_exactly_that_files_partials(hf: HFServer, tmp_path: Path) -> None:
    """A stopped pull's bytes go, and only its: another file's partial (a longer name), another model's, and a
    model already downloaded stay."""
    chat, embed = hosted(hf, CHAT_REPO), hosted(hf, EMBED_REPO)
    models_dir = tmp_path / "models"
    stopped, partial = cancelled_at(20 * MIB, chat, models_dir)
    assert "or discard it" in (stopped.hint or "")
    kept = partial.stat().st_size
    staging = models_dir / STAGING
    stale = staging / f"{chat.path}.{'0' * 16}.partial"  # this file's, of another version: its bytes too
    stale.write_bytes(b"GGUF" + bytes(96))
    longer = staging / f"{chat.path}.Q8_0.gguf.{'0' * 16}.partial"  # another file's
    longer.write_bytes(b"GGUF" + bytes(100))
    downloaded = pull(target_of(embed), models_dir)
    embed_partial = staging / f"{embed.path}.{'1' * 16}.partial"  # another model's
    embed_partial.write_bytes(b"GGUF" + bytes(100))

    assert discard(target_of(chat), models_dir) == kept + 100

    assert not partial.exists() and not stale.exists() and partial_files(models_dir, chat.path) == []
    assert longer.is_file() and embed_partial.is_file() and downloaded.is_file()
    assert sorted(p.name for p in staging.iterdir() if p.name.startswith(chat.path)) == [longer.name]  # no lock left
    assert discard(target_of(chat), models_dir) == 0  # nothing left: nothing to free, no error
    assert discard(target_of(chat), tmp_path / "elsewhere") == 0 and not (tmp_path / "elsewhere").exists()
    pull(target_of(chat), models_dir)  # a later pull starts again from the beginning
    assert all(r == "bytes=0-" for r in hf.ranges()) and sha256_of(models_dir / chat.path) == chat.sha256


def test_discard_is_refused_while_a_pull_of_that_file_runs(hf: HFServer, tmp_path: Path) -> None:
    chat = hosted(hf, CHAT_REPO)
    models_dir = tmp_path / "models"
    hf.hold(20 * MIB)
    running, failed = pull_in_thread(target_of(chat), models_dir)
    try:
        assert hf.held.wait(30)
        with pytest.raises(AlreadyPulling, match="cannot be discarded while a pull of it runs") as refused:
            discard(target_of(chat), models_dir)
        assert refused.value.status_code == 409 and "cancel" in (refused.value.hint or "")
        assert partial_files(models_dir, chat.path)  # the running pull's file is untouched
    finally:
        hf.release()
        running.join(60)
    assert not running.is_alive() and failed == [] and sha256_of(models_dir / chat.path) == chat.sha256


def test_a_corrupted_byte_is_refused_and_nothing_is_kept(hf: HFServer, tmp_path: Path) -> None:
    embed = hosted(hf, EMBED_REPO)
    models_dir = tmp_path / "models"
    hf.faults.flip_at = 12_345_678

    with pytest.raises(ChecksumMismatch, match="the file was deleted"):
        pull(target_of(embed), models_dir)

    assert models_listing(models_dir) == [] and partial_files(models_dir, embed.path) == []
    assert not (models_dir / MANIFEST).exists()
    hf.faults.flip_at = None
    path = pull(target_of(embed), models_dir)  # the next pull starts again, whole
    assert sha256_of(path) == embed.sha256 and hf.ranges() == []


def test_a_corrupted_partial_is_resumed_then_removed(hf: HFServer, tmp_path: Path) -> None:
    """A partial damaged on disk after an interruption: the next pull resumes it, finds the sha256 wrong and
    removes it; the one after starts again and ends verified."""
    embed = hosted(hf, EMBED_REPO)
    models_dir = tmp_path / "models"
    _, partial = cancelled_at(10 * MIB, embed, models_dir)
    kept = partial.stat().st_size
    with partial.open("r+b") as fh:
        fh.seek(1_000_000)
        byte = fh.read(1)
        fh.seek(1_000_000)
        fh.write(bytes([byte[0] ^ 0x01]))

    with pytest.raises(ChecksumMismatch):
        pull(target_of(embed), models_dir)
    assert hf.ranges() == [f"bytes={kept}-"]  # resumed
    assert partial_files(models_dir, embed.path) == [] and models_listing(models_dir) == []

    assert sha256_of(pull(target_of(embed), models_dir)) == embed.sha256


def test_a_partial_that_is_not_gguf_is_started_again(hf: HFServer, tmp_path: Path) -> None:
    embed = hosted(hf, EMBED_REPO)
    models_dir = tmp_path / "models"
    (models_dir / STAGING).mkdir(parents=True)
    (models_dir / STAGING / f"{embed.path}.{embed.sha256[:16]}.partial").write_bytes(b"<html>" * 1000)
    assert sha256_of(pull(target_of(embed), models_dir)) == embed.sha256
    assert hf.ranges() == []


def test_an_html_error_page_is_refused(hf: HFServer, tmp_path: Path) -> None:
    embed = hosted(hf, EMBED_REPO)
    models_dir = tmp_path / "models"
    hf.faults.html_get = True  # the HEAD is right, the download answers 200 with a web page
    with pytest.raises(NotAGGUF, match="an HTML page, not a GGUF model"):
        pull(target_of(embed), models_dir)
    assert models_listing(models_dir) == [] and partial_files(models_dir, embed.path) == []


def test_a_captive_portal_is_refused_before_any_download(hf: HFServer, tmp_path: Path) -> None:
    embed = hosted(hf, EMBED_REPO)
    models_dir = tmp_path / "models"
    hf.faults.portal = True  # every request answers 200 with a login page
    with pytest.raises(NotAGGUF, match="captive portal"):
        pull(target_of(embed), models_dir)
    assert hf.gets() == [] and models_listing(models_dir) == []


def test_not_enough_disk_space_is_refused_before_downloading(hf: HFServer, tmp_path: Path) -> None:
    """The real disk's free space against a size bigger than any disk (as the server claims it)."""
    embed = hosted(hf, EMBED_REPO)
    hf.faults.claim_size = 1 << 60
    with pytest.raises(NotEnoughSpace, match="nothing was downloaded"):
        pull(target_of(embed), tmp_path / "models")
    assert hf.gets() == []


def test_the_space_check_counts_what_is_already_downloaded(hf: HFServer, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    chat = hosted(hf, CHAT_REPO)
    models_dir = tmp_path / "models"
    _, partial = cancelled_at(30 * MIB, chat, models_dir)
    missing = chat.size - partial.stat().st_size
    real = shutil.disk_usage

    def free(bytes_free: int) -> None:
        monkeypatch.setattr(pull_module.shutil, "disk_usage",
                            lambda path: real(path)._replace(free=bytes_free))

    free(missing - 1)
    with pytest.raises(NotEnoughSpace):
        pull(target_of(chat), models_dir)
    assert len(hf.gets()) == 1  # only the cancelled one
    free(missing)
    assert sha256_of(pull(target_of(chat), models_dir)) == chat.sha256


def test_the_catalog_sha256_must_match_the_servers(hf: HFServer, tmp_path: Path) -> None:
    embed = hosted(hf, EMBED_REPO)
    with pytest.raises(ChecksumMismatch, match="not the file the catalog names"):
        pull(target_of(embed, sha256="0" * 64), tmp_path / "models")
    assert hf.gets() == []


def test_a_redirect_to_the_cdn_is_followed(copies: dict[str, Path], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    with HFServer(redirect=True) as hub:
        embed = hub.add(EMBED_REPO, copies["embed"].name, copies["embed"])
        path = pull(target_of(embed), tmp_path / "models", endpoint=hub.url)
        assert sha256_of(path) == embed.sha256
        assert [r.path for r in hub.gets()] == [f"/_blobs/{embed.sha256}"]


def test_unknown_repository_or_file_is_named(hf: HFServer, tmp_path: Path) -> None:
    with pytest.raises(PullError, match="has no file 'nope.gguf'"):
        pull(PullTarget(EMBED_REPO, "nope.gguf", "main", None, None, None), tmp_path / "models")
    with pytest.raises(PullError, match="no repository someone/else"):
        pull(PullTarget("someone/else", "x.gguf", "main", None, None, None), tmp_path / "models")
    with pytest.raises(NotAGGUF, match="does not end in .gguf"):
        pull(PullTarget(EMBED_REPO, "README.md", "main", None, None, None), tmp_path / "models")


def test_no_connection_names_the_address_and_sha256(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    target = PullTarget(EMBED_REPO, "all-MiniLM-L6-v2.F16.gguf", "main", "ab" * 32, None, None)
    with pytest.raises(NoConnection) as failed:
        pull(target, tmp_path / "models", endpoint=closed)
    message = failed.value.message
    assert message.startswith("no connection to 127.0.0.1")
    assert "put the file in models/ by hand" in message
    assert f"{closed}/{EMBED_REPO}/resolve/main/all-MiniLM-L6-v2.F16.gguf" in message and "ab" * 32 in message


def test_cli_pull_says_how_to_use_the_file(hf: HFServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    embed = hosted(hf, EMBED_REPO)
    models_dir = tmp_path / "models"
    assert main(["models", "pull", f"{EMBED_REPO}:{embed.path}", "--models-dir", str(models_dir)]) == 0
    out = capsys.readouterr().out
    assert "sha256 and GGUF header verified" in out
    assert "[models.embed]" in out and f'path = "{(models_dir / embed.path).resolve()}"' in out
    assert "Settings → Models" in out


def test_a_catalog_chat_model_is_told_with_the_context_it_was_sized_for(tmp_path: Path) -> None:
    from lyra_local.cli.models import how_to_use
    from lyra_local.modelfiles.catalog import resolve

    target = resolve("qwen2.5-7b-instruct")
    lines = how_to_use(tmp_path / target.local_name, target, named_dir=False).splitlines()
    assert lines[1:4] == ["  [models.chat]", f'  path = "{target.local_name}"', "  n_ctx = 8192"]


def test_cli_catalog_says_what_fits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LYRA_GPU_DEVICES", '[{"name": "Test GPU", "total_mib": 24576}]')
    monkeypatch.setenv("COLUMNS", "250")
    for key in [k for k in os.environ if k.startswith("LYRA_") and k != "LYRA_GPU_DEVICES"]:
        monkeypatch.delenv(key)
    embeds = [entry for entry in load_catalog() if entry.role == "embed"]
    models_dir = tmp_path / "models"
    models_dir.mkdir()
    (models_dir / embeds[0].file).write_bytes(b"GGUF")
    (models_dir / STAGING).mkdir()
    (models_dir / STAGING / f"{embeds[1].file}.{'0' * 16}.partial").write_bytes(b"GGUF" + bytes(2_000_000))
    config = tmp_path / "lyra.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\nmodels_dir = "{models_dir}"\n')
    assert main(["--config", str(config), "models", "catalog", "--role", "embed"]) == 0
    out = capsys.readouterr().out
    assert embeds and all(entry.name in out for entry in embeds)
    assert "Test GPU" in out
    lines = out.splitlines()
    rows = {entry.name: next(line for line in lines if line.startswith(f"{entry.name} ")) for entry in embeds}
    assert all(" GPU " in row for row in rows.values())  # runs here: on the GPU
    assert [name for name, row in rows.items() if row.rstrip().endswith("yes")] == [embeds[0].name]  # `have`
    assert rows[embeds[1].name].rstrip().endswith(" 2 MB")  # a stopped pull's bytes
    assert not any(entry.name in out for entry in load_catalog() if entry.role == "chat")


def test_the_catalog_fits_80_columns_and_says_how_fast_each_chat_model_would_talk_here(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every entry on one line of an 80-column terminal, no cell cut or wrapped, and a CPU-only box told how
    fast each chat model would write (from its size and this machine's memory bandwidth), or that it is too
    big; an embedder is just "CPU", not "slow"."""
    monkeypatch.setenv("LYRA_GPU_DEVICES", '{"gpus": [], "ram_total_mib": 24576, "bandwidth_gbs": 12}')
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["--config", str(tmp_path / "none.toml"), "models", "catalog"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    for entry in load_catalog():
        [row] = [line for line in lines if line.startswith(f"{entry.name} ")]  # whole, on one line
        assert "…" not in row, row
        words = fit.words_a_second(fit.need_of_entry(entry, catalog_ctx(None, entry)), devices.probe())
        if entry.role != "chat":
            assert " CPU " in row + " " and "words" not in row, row
        elif entry.size > 24 * 1024**3:
            assert "too big" in row, row
        else:
            assert words is not None and (f"CPU ~{round(words)} word" in row or "CPU <1 word/s" in row), row


def test_cli_discard_says_what_it_freed(hf: HFServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    embed = hosted(hf, EMBED_REPO)
    models_dir = tmp_path / "models"
    staging = models_dir / STAGING
    staging.mkdir(parents=True)
    (staging / f"{embed.path}.{'1' * 16}.partial").write_bytes(b"GGUF" + bytes(3_000_000))
    ref = f"{EMBED_REPO}:{embed.path}"
    assert main(["models", "discard", ref, "--models-dir", str(models_dir)]) == 0
    assert f"discarded the partial download of {embed.path}: 3 MB freed" in capsys.readouterr().out
    assert partial_files(models_dir, embed.path) == []
    assert main(["models", "discard", ref, "--models-dir", str(models_dir)]) == 0
    assert "nothing to discard" in capsys.readouterr().out
    assert hf.requests == []  # discarding never asks the server


# ---------------------------------------------------------------- a real `lyra models pull` process


def lyra_pull(ref: str, models_dir: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "lyra_local", "models", "pull", ref, "--models-dir",
                             str(models_dir)], cwd=REPO, env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def pull_env(tmp_path: Path, endpoint: str, **extra: str) -> dict[str, str]:
    env = base_env(tmp_path)
    for key in ("HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "TRANSFORMERS_OFFLINE"):
        env.pop(key, None)
    env.update({"HF_ENDPOINT": endpoint, "HF_HOME": str(tmp_path / "hf-home"), **extra})
    return env


@pytest.mark.slow
def test_a_killed_pull_resumes_to_the_right_file(hf: HFServer, tmp_path: Path) -> None:
    chat = hosted(hf, CHAT_REPO)
    models_dir = tmp_path / "models"
    env = pull_env(tmp_path, hf.url)
    hf.hold(45 * MIB)  # the body stops there and waits: the process is killed mid-download
    proc = lyra_pull(f"{CHAT_REPO}:{chat.path}", models_dir, env)
    try:
        assert hf.held.wait(60), "the download never reached the hold"
        deadline = time.monotonic() + 30
        while not any(p.stat().st_size for p in partial_files(models_dir, chat.path)):
            assert time.monotonic() < deadline, "nothing was written before the hold"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate(timeout=30)  # reaped, its pipes closed
        hf.release()
    [partial] = partial_files(models_dir, chat.path)
    kept = partial.stat().st_size
    assert 0 < kept < chat.size and models_listing(models_dir) == []

    done = lyra_pull(f"{CHAT_REPO}:{chat.path}", models_dir, env)
    out, err = done.communicate(timeout=120)

    assert done.returncode == 0, err
    assert hf.ranges() == [f"bytes={kept}-"]
    assert sha256_of(models_dir / chat.path) == chat.sha256 and "[models.chat]" in out
    assert partial_files(models_dir, chat.path) == []


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_keeps_the_partial(hf: HFServer, tmp_path: Path) -> None:
    chat = hosted(hf, CHAT_REPO)
    models_dir = tmp_path / "models"
    hf.hold(30 * MIB)
    proc = lyra_pull(f"{CHAT_REPO}:{chat.path}", models_dir, pull_env(tmp_path, hf.url))
    try:
        assert hf.held.wait(60)
        deadline = time.monotonic() + 30
        while not any(p.stat().st_size for p in partial_files(models_dir, chat.path)):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.communicate(timeout=30)
        hf.release()
    assert proc.returncode == 130
    assert "kept in" in err and "resumes it" in err and "models discard" in err and "Traceback" not in err
    assert partial_files(models_dir, chat.path) and models_listing(models_dir) == []


@pytest.mark.slow
@pytest.mark.parametrize("offline", [False, True], ids=["closed-port", "HF_HUB_OFFLINE"])
def test_no_network_exits_non_zero_with_the_clear_message(hf: HFServer, tmp_path: Path, offline: bool) -> None:
    entry = next(e for e in load_catalog() if e.sha256)
    endpoint = hf.url if offline else f"http://127.0.0.1:{free_port()}"
    env = pull_env(tmp_path, endpoint, **({"HF_HUB_OFFLINE": "1"} if offline else {}))
    proc = lyra_pull(entry.name, tmp_path / "models", env)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert "error: no connection to 127.0.0.1" in err and "put the file in models/ by hand" in err
    assert f"{endpoint}/{entry.repo}/resolve/{entry.revision}/{entry.file}" in err and str(entry.sha256) in err
    assert "Traceback" not in err and hf.requests == []
    assert not (tmp_path / "models").exists() or models_listing(tmp_path / "models") == []
