"""Pulling a model from the web UI: the API of the downloads, the catalog with what fits
this machine, the first-run guide; then Settings → Models and the first-run guide's Download and use in a real
headless Chromium against a real `lyra serve`.

The "Hugging Face" here is tests/hf_server.py on 127.0.0.1 (``HF_ENDPOINT``), serving the real tiny chat GGUF
of models/ under a made-up repository, with a pause on demand (``hold``) so a download can be seen half-way and
cancelled there. The catalog's own entries name 2-20 GB files nobody downloads in a test, so the pulls here are
the person's own ``owner/repo:File.gguf``, which Settings offers beside the catalog. The GPUs are a made-up
device list (``LYRA_GPU_DEVICES``) where the fit matters. Nothing here reaches the internet.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Browser, Locator, Page, Route, expect

from lyra_local.config import Settings
from lyra_local.modelfiles.catalog import load_catalog
from lyra_local.modelfiles.pull import partial_files

from .conftest import CHAT_GGUF, EMBED_GGUF, Served, base_env, fake_client, require_file, serve_lyra
from .hf_server import HFServer
from .test_model_pull import private_hub_settings
from .test_web_ui import CONFIG, opened, send, shot
from .web_fixtures import AppParts

pytestmark = pytest.mark.models  # the real tiny GGUF is what is downloaded

REPO_ID = "lyra-test/Tiny-Companion-GGUF"
FILE = "tiny-companion.Q4_1.gguf"
REF = f"{REPO_ID}:{FILE}"
MB = 1_000_000
GPU_12GB = json.dumps([{"name": "RTX 4070", "total_mib": 12282, "free_mib": 11800}])
CPU_ONLY = json.dumps({"gpus": [], "ram_total_mib": 32768, "ram_free_mib": 30000})


@pytest.fixture(autouse=True)
def private_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No token, cache or offline switch of the person's (`make test OFFLINE=` sets HF_HUB_OFFLINE=1 for the
    whole run): huggingface_hub read them at its import, so its constants are set too, not only the
    environment, which `lyra serve` started by a test reads afresh."""
    private_hub_settings(tmp_path, monkeypatch)


@pytest.fixture
def hf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HFServer]:
    """The local Hugging Face, serving the tiny chat model as ``REF``; HF_ENDPOINT points at it."""
    with HFServer() as server:
        server.add(REPO_ID, FILE, require_file(CHAT_GGUF))
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
        yield server


@pytest.fixture
def models_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    return folder


@pytest.fixture
def app_parts(models_dir: Path) -> AppParts:
    return AppParts(env={"LYRA_MODELS_DIR": str(models_dir)})


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wait_for(client: TestClient, job_id: str, until: Callable[[dict[str, Any]], bool], timeout: float = 60) -> dict[
        str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job: dict[str, Any] = client.get(f"/api/models/pulls/{job_id}").json()["job"]
        if until(job) or time.monotonic() > deadline:
            return job
        time.sleep(0.05)


def ended(job: dict[str, Any]) -> bool:
    return job["state"] != "running"


# -- the API ------------------------------------------------------------------------------------------------


def test_a_pull_reports_its_progress_and_ends_with_the_checked_file(hf: HFServer, client: TestClient,
                                                                    models_dir: Path) -> None:
    hf.hold(after=30 * MB)  # the transfer pauses there, so the job is seen half-way
    answer = client.post("/api/models/pulls", json={"name": REF})
    assert answer.status_code == 202 and answer.json()["joined"] is False
    job = answer.json()["job"]
    assert (job["state"], job["repo"], job["file"], job["title"]) == ("running", REPO_ID, FILE, FILE)
    half = wait_for(client, job["id"], lambda j: j["done"] > 0)
    size = CHAT_GGUF.stat().st_size
    assert half["state"] == "running" and 0 < half["done"] <= 30 * MB and half["total"] == size
    assert half["rate"] > 0
    assert client.get("/api/models/pulls").json()["jobs"][0]["id"] == job["id"]  # a page opened later finds it
    hf.release()
    done = wait_for(client, job["id"], ended)
    assert done["state"] == "done" and done["error"] is None and done["path_name"] == FILE
    assert done["done"] == size and sha256(models_dir / FILE) == sha256(CHAT_GGUF)
    files = client.get("/api/models/files").json()["files"]
    assert [f["name"] for f in files] == [FILE] and files[0]["role_hint"] == "chat"  # Apply can choose it now


def test_cancel_keeps_the_partial_file_and_the_next_pull_resumes_it(hf: HFServer, client: TestClient,
                                                                   models_dir: Path) -> None:
    hf.hold(after=30 * MB)
    job = client.post("/api/models/pulls", json={"repo": REPO_ID, "file": FILE}).json()["job"]
    wait_for(client, job["id"], lambda j: j["done"] > 0)
    cancelling = client.delete(f"/api/models/pulls/{job['id']}")
    assert cancelling.status_code == 202 and cancelling.json()["job"]["cancelling"] is True
    hf.release()  # the transfer notices the cancel at its next chunk
    cancelled = wait_for(client, job["id"], ended)
    assert cancelled["state"] == "cancelled" and cancelled["error"]["type"] == "PullCancelled"
    assert "kept" in cancelled["error"]["message"]
    kept = partial_files(models_dir, FILE)
    assert len(kept) == 1 and kept[0].stat().st_size > 0 and not (models_dir / FILE).exists()
    have = kept[0].stat().st_size
    again = client.post("/api/models/pulls", json={"name": REF}).json()["job"]
    assert again["id"] != job["id"]
    assert wait_for(client, again["id"], ended)["state"] == "done"
    assert f"bytes={have}-" in hf.ranges()  # resumed where the cancelled one stopped
    assert sha256(models_dir / FILE) == sha256(CHAT_GGUF) and partial_files(models_dir, FILE) == []


def test_a_cancelled_pulls_partial_is_discarded(hf: HFServer, client: TestClient, models_dir: Path) -> None:
    hf.hold(after=30 * MB)
    job = client.post("/api/models/pulls", json={"name": REF}).json()["job"]
    wait_for(client, job["id"], lambda j: j["done"] > 0)
    assert job["partial"] == 0  # a running job's bytes are its progress
    busy = client.delete(f"/api/models/partials/{REF}")
    assert busy.status_code == 409 and busy.json()["error"]["type"] == "AlreadyPulling"
    assert "cancel" in busy.json()["error"]["hint"]
    client.delete(f"/api/models/pulls/{job['id']}")
    hf.release()
    cancelled = wait_for(client, job["id"], ended)
    assert cancelled["state"] == "cancelled" and "or discard it" in cancelled["error"]["hint"]
    [kept] = partial_files(models_dir, FILE)
    assert cancelled["partial"] == kept.stat().st_size > 0  # what the page offers to resume or discard
    other = models_dir / ".pull" / f"{FILE}.Q8_0.gguf.{'0' * 16}.partial"  # another file's: stays
    other.write_bytes(b"GGUF" + bytes(10))

    gone = client.delete(f"/api/models/partials/{REF}")

    assert gone.status_code == 200
    assert gone.json() == {"name": REF, "file": FILE, "freed": cancelled["partial"]}
    assert partial_files(models_dir, FILE) == [] and other.is_file() and not (models_dir / FILE).exists()
    assert client.get(f"/api/models/pulls/{job['id']}").json()["job"]["partial"] == 0
    assert client.delete(f"/api/models/partials/{REF}").json()["freed"] == 0  # nothing left: no error
    unknown = client.delete("/api/models/partials/qwen7b")
    assert unknown.status_code == 404 and unknown.json()["error"]["type"] == "UnknownModel"
    assert client.delete(f"/api/models/partials/{REPO_ID}:../{FILE}").status_code == 404  # never a path
    refused = client.delete(f"/api/models/partials/{REF}", headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403 and other.is_file()


def test_the_catalog_shows_a_partial_download_and_its_size(client: TestClient, models_dir: Path) -> None:
    entry = client.get("/api/models/catalog").json()["models"][0]
    assert entry["partial"] == 0 and entry["downloaded"] is False
    staging = models_dir / ".pull"
    staging.mkdir()
    (staging / f"{entry['file']}.{'0' * 16}.partial").write_bytes(b"GGUF" + bytes(1_000))
    models = {m["name"]: m for m in client.get("/api/models/catalog").json()["models"]}
    assert models[entry["name"]]["partial"] == 1_004 and models[entry["name"]]["downloaded"] is False
    assert client.delete(f"/api/models/partials/{entry['name']}").json()["freed"] == 1_004
    assert client.get("/api/models/catalog").json()["models"][0]["partial"] == 0


def test_a_second_pull_of_the_same_file_joins_the_first(hf: HFServer, client: TestClient) -> None:
    hf.hold(after=10 * MB)
    first = client.post("/api/models/pulls", json={"name": REF}).json()
    second = client.post("/api/models/pulls", json={"repo": REPO_ID, "file": FILE, "revision": "main"})
    assert second.status_code == 202 and second.json()["joined"] is True
    assert second.json()["job"]["id"] == first["job"]["id"]
    hf.release()
    assert wait_for(client, first["job"]["id"], ended)["state"] == "done"
    assert len(hf.gets()) <= 2  # one transfer (its resume after the pause included), never two racing
    assert len(client.get("/api/models/pulls").json()["jobs"]) == 1


def test_another_file_under_the_same_name_is_refused_while_the_first_runs(hf: HFServer,
                                                                          client: TestClient) -> None:
    """A file of the same name in a folder of the repository is another file: it does not join the first."""
    hf.hold(after=10 * MB)
    first = client.post("/api/models/pulls", json={"name": REF}).json()
    other = client.post("/api/models/pulls", json={"name": f"{REPO_ID}:q4/{FILE}"})
    assert other.status_code == 409 and "being downloaded from" in other.json()["error"]["message"]
    hf.release()
    assert wait_for(client, first["job"]["id"], ended)["state"] == "done"


def test_a_failed_pull_says_why_with_a_hint(hf: HFServer, client: TestClient, models_dir: Path) -> None:
    hf.faults.flip_at = 5 * MB  # a corrupted byte: the sha256 refuses the file
    job = client.post("/api/models/pulls", json={"name": REF}).json()["job"]
    failed = wait_for(client, job["id"], ended)
    assert failed["state"] == "failed" and failed["error"]["type"] == "ChecksumMismatch"
    assert failed["error"]["hint"] and not (models_dir / FILE).exists()
    hf.faults.flip_at = None
    missing = client.post("/api/models/pulls", json={"name": f"{REPO_ID}:no-such-file.gguf"}).json()["job"]
    assert "no file" in wait_for(client, missing["id"], ended)["error"]["message"]


def test_no_connection_is_said_with_the_address_and_sha256(client: TestClient, monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing answers
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    job = client.post("/api/models/pulls", json={"name": "qwen2.5-3b-instruct"}).json()["job"]
    failed = wait_for(client, job["id"], ended)
    assert failed["state"] == "failed" and failed["error"]["type"] == "NoConnection"
    assert "put the file in models/ by hand" in failed["error"]["message"]
    assert "626b4a6678b86442240e33df819e00132d3ba7dddfe1cdc4fbb18e0a9615c62d" in failed["error"]["message"]


def test_what_cannot_be_pulled_is_refused_as_a_lyra_error(client: TestClient) -> None:
    unknown = client.post("/api/models/pulls", json={"name": "qwen7b"})
    assert unknown.status_code == 404 and unknown.json()["error"]["type"] == "UnknownModel"
    assert "qwen2.5-7b-instruct" in unknown.json()["error"]["message"]  # the close names
    both = client.post("/api/models/pulls", json={"name": REF, "repo": REPO_ID, "file": FILE})
    assert both.status_code == 400 and both.json()["error"]["hint"]
    assert client.post("/api/models/pulls", json={"name": REF, "path": "/etc"}).status_code == 422
    for outside in ({"name": f"{REPO_ID}:../{FILE}"}, {"repo": REPO_ID, "file": f"../../{FILE}"},
                    {"repo": REPO_ID, "file": f"/tmp/{FILE}"}, {"repo": "../..", "file": FILE},
                    {"repo": REPO_ID, "file": FILE, "revision": "../main"}):
        assert client.post("/api/models/pulls", json=outside).status_code == 404, outside  # never a path
    assert client.get("/api/models/pulls/nope").json()["error"]["type"] == "NotFound"
    assert client.delete("/api/models/pulls/nope").status_code == 404
    assert client.get("/api/models/pulls").json() == {"jobs": []}  # nothing started by itself


def test_a_pull_from_another_site_is_refused(client: TestClient) -> None:
    refused = client.post("/api/models/pulls", json={"name": REF}, headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403 and refused.json()["error"]["type"] == "cross_origin"
    assert client.get("/api/models/pulls").json() == {"jobs": []}
    assert client.get("/api/models/catalog", headers={"Host": "evil.example"}).status_code == 421


def test_the_server_stopping_cancels_a_pull_and_keeps_its_partial(hf: HFServer, make_settings: Callable[
        ..., Settings], models_dir: Path) -> None:
    hf.hold(after=30 * MB)
    with fake_client(make_settings("", LYRA_MODELS_DIR=str(models_dir))) as client:
        job = client.post("/api/models/pulls", json={"name": REF}).json()["job"]
        wait_for(client, job["id"], lambda j: j["done"] > 0)
        state = client.app.state.lyra  # type: ignore[attr-defined]
        threading.Timer(0.5, hf.release).start()  # the paused transfer goes on, and sees the cancel
    stopped = state.pulls.get(job["id"])
    assert stopped.state == "cancelled" and not (models_dir / FILE).exists()
    assert partial_files(models_dir, FILE)  # kept for the next pull to resume
    with pytest.raises(Exception, match="stopping"):
        state.pulls.start(stopped.target, models_dir)  # nothing starts once stopped


def test_the_catalog_says_what_fits_this_machine_and_what_is_here(client: TestClient, models_dir: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LYRA_GPU_DEVICES", GPU_12GB)
    (models_dir / "qwen2.5-3b-instruct-q4_k_m.gguf").symlink_to(require_file(CHAT_GGUF))  # "downloaded"
    (models_dir / CHAT_GGUF.name).symlink_to(CHAT_GGUF)  # the chat model the settings name, for its offload
    body = client.get("/api/models/catalog").json()
    assert body["machine"]["gpus"][0]["name"] == "RTX 4070" and "RTX 4070" in body["machine"]["text"]
    models = {m["name"]: m for m in body["models"]}
    assert models["qwen2.5-7b-instruct"]["fit"]["text"] == "fits on the GPU"
    assert models["qwen2.5-32b-instruct"]["fit"]["kind"] in ("partial", "cpu")
    assert models["qwen2.5-3b-instruct"]["downloaded"] is True
    assert models["qwen2.5-7b-instruct"]["downloaded"] is False
    assert {m["role"] for m in body["models"]} == {"chat", "embed", "rerank"}
    offload = client.get("/api/models/offload").json()["roles"]
    assert offload["chat"].startswith("auto → ") and "RTX 4070" in offload["chat"]  # what Settings says it chose
    monkeypatch.setenv("LYRA_GPU_DEVICES", CPU_ONLY)
    cpu = {m["name"]: m for m in client.get("/api/models/catalog").json()["models"]}
    assert re.fullmatch(r"on the CPU, about \d+ words? a second", cpu["qwen2.5-7b-instruct"]["fit"]["text"])
    assert cpu["bge-small-en-v1.5"]["fit"]["text"] == "on the CPU"  # an embedder writes no words: not "slow"
    assert client.get("/api/models/offload").json()["roles"]["embed"].startswith("auto → 0")


def test_the_first_run_suggests_the_chat_model_this_machine_fits(client: TestClient,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LYRA_GPU_DEVICES", GPU_12GB)
    body = client.get("/api/models/first-run").json()
    assert body["demo"] is True and "RTX 4070" in body["machine"]["text"]
    gpu = body["recommended"]
    assert gpu["role"] == "chat" and gpu["fit"]["kind"] == "gpu" and gpu["thinking"] is False
    assert gpu["download_s"] == round(gpu["size"] * 8 / (body["assumed_mbit_s"] * 1e6))
    monkeypatch.setenv("LYRA_GPU_DEVICES", CPU_ONLY)
    cpu = client.get("/api/models/first-run").json()["recommended"]
    assert cpu["fit"]["kind"] == "cpu" and cpu["parameters"] < gpu["parameters"]  # small on the CPU
    assert client.get("/api/models/pulls").json() == {"jobs": []}  # asking downloads nothing


# -- in the browser ------------------------------------------------------------------------------------------


@pytest.fixture
def served_pulls(tmp_path: Path, hf: HFServer) -> Iterator[Served]:
    """`lyra serve` on the demo models (linked into its own models folder), HF_ENDPOINT at the local hub."""
    folder = tmp_path / "models"
    folder.mkdir()
    for model in (CHAT_GGUF, EMBED_GGUF):
        (folder / model.name).symlink_to(require_file(model))
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_MODELS_DIR": str(folder),
           "HF_ENDPOINT": hf.url, "HF_HOME": str(tmp_path / "hf-home"), "LYRA_GPU_DEVICES": CPU_ONLY}
    env.pop("HF_HUB_OFFLINE", None)
    with serve_lyra(tmp_path, env, CONFIG) as running:
        yield running


def replied(page: Page, count: int) -> None:
    expect(page.locator(".message.assistant .why-wrap")).to_have_count(count, timeout=120_000)


def held_download(page: Page, hf: HFServer) -> tuple[Locator, Locator]:
    """``REF`` pulled from Settings by its name, the hub holding it after 30 MB (``hf.release()`` lets it go
    on): its line in the page and that line's figures, once they show the download under way."""
    hf.hold(after=30 * MB)
    page.fill("#pull-ref", REF)
    page.click("#pull-own")
    download = page.locator(f"#pulls .pull:has-text('{FILE}')")
    figures = download.locator(".pull-figures")
    expect(figures).to_contain_text(" of 98 MB", timeout=30_000)
    return download, figures


def chat_model(served: Served) -> str:
    model: str = httpx.get(f"{served.url}/api/settings").json()["roles"]["chat"]["model"]
    return model


@pytest.mark.slow
def test_pull_from_settings_with_progress_and_cancel_then_apply(browser: Browser, served_pulls: Served,
                                                                hf: HFServer, tmp_path: Path) -> None:
    with opened(browser, served_pulls.url) as page:
        page.locator(".tab[data-panel=settings]").click()
        catalog = page.locator("#model-catalog li")
        expect(catalog.filter(has_text="Qwen2.5 7B Instruct")).to_contain_text(
            re.compile(r"on the CPU, about \d+ words? a second"))
        expect(page.locator("#machine-line")).to_contain_text("no GPU")
        expect(page.locator("[data-role=chat] .model-offload")).to_contain_text("Now: auto → 0")
        assert hf.requests == []  # opening Settings downloads nothing
        page.fill("#pull-ref", "qwen7b")
        page.click("#pull-own")
        expect(page.locator("#pull-status")).to_contain_text("did you mean qwen2.5-7b-instruct")
        download, figures = held_download(page, hf)
        expect(figures).to_contain_text("MB/s")
        expect(download.locator("progress")).to_be_visible()
        shot(page, "model-pull-progress")
        download.get_by_role("button", name=f"Cancel the download of {FILE}").click()
        hf.release()
        expect(figures).to_contain_text("Cancelled", timeout=30_000)
        expect(figures).to_contain_text("kept")
        assert partial_files(tmp_path / "models", FILE)

        dropped: list[str] = []

        def flaky(route: Route) -> None:  # the page's first polls fail: it keeps following the download
            if route.request.method == "GET" and len(dropped) < 2:
                dropped.append(route.request.url)
                route.abort()
            else:
                route.continue_()

        page.route("**/api/models/pulls/*", flaky)
        page.fill("#pull-ref", REF)
        page.click("#pull-own")  # again: it resumes, and runs to the end
        expect(figures).to_contain_text("Downloaded and checked", timeout=60_000)
        assert len(dropped) == 2 and any(r and r != "bytes=0-" for r in hf.ranges())
        shot(page, "model-pull-done")
        download.get_by_role("button", name="Use it for chat").click()
        status = page.locator("#models-status")
        expect(status).to_contain_text("Applied: chat", timeout=120_000)
        assert chat_model(served_pulls) == FILE and FILE in served_pulls.config.read_text()
        expect(page.locator("#model-files li").filter(has_text=FILE)).to_contain_text("used for chat")
        page.click("#close-panel")
        send(page, "Hello from the downloaded model")
        replied(page, 1)
        assert "tiny-companion" in served_pulls.log.read_text() or chat_model(served_pulls) == FILE


@pytest.mark.slow
def test_a_partial_download_is_discarded_from_settings(browser: Browser, served_pulls: Served,
                                                        hf: HFServer, tmp_path: Path) -> None:
    """A catalog entry's kept bytes (a pull stopped earlier), then a download cancelled here: each one's Discard
    asks first, frees the space, and the entry or the line offers Download again."""
    models = tmp_path / "models"
    entry = next(m for m in load_catalog() if m.name == "qwen2.5-7b-instruct")
    (models / ".pull").mkdir()
    planted = models / ".pull" / f"{entry.file}.{'0' * 16}.partial"
    planted.write_bytes(b"GGUF" + bytes(2 * MB))
    with opened(browser, served_pulls.url) as page:
        page.locator(".tab[data-panel=settings]").click()
        item = page.locator("#model-catalog li").filter(has_text=entry.title)
        expect(item).to_contain_text("partial 2 MB")
        expect(item.get_by_role("button", name=f"Download {entry.title}", exact=True)).to_have_text("Resume download")
        item.get_by_role("button", name=f"Discard the partial download of {entry.title}").click()
        dialog = page.locator("#confirm-dialog")
        expect(dialog).to_contain_text("The 2 MB downloaded so far are deleted")
        expect(dialog.locator("button[value=ok]")).to_have_text("Discard")  # not the forget dialog's "Forget it"
        dialog.locator("button[value=ok]").click()
        expect(item.get_by_role("button", name=f"Download {entry.title}", exact=True)).to_have_text("Download")
        expect(item).not_to_contain_text("partial")
        assert not planted.exists() and hf.requests == []  # discarding asks no server

        download, figures = held_download(page, hf)
        download.get_by_role("button", name=f"Cancel the download of {FILE}").click()
        hf.release()
        expect(figures).to_contain_text("downloaded are kept. Resume goes on from there", timeout=30_000)
        expect(figures).to_contain_text("Discard")
        [kept] = partial_files(models, FILE)
        discard = download.get_by_role("button", name=f"Discard the partial download of {FILE}")
        discard.click()
        dialog.locator("button[value=cancel]").click()  # asked, and said no: nothing is deleted
        expect(dialog).to_be_hidden()
        assert kept.is_file()
        shot(page, "model-pull-cancelled")
        discard.click()
        dialog.locator("button[value=ok]").click()
        expect(figures).to_contain_text("Discarded: ", timeout=30_000)
        expect(figures).to_contain_text("freed")
        expect(download.get_by_role("button", name=f"Download {FILE}", exact=True)).to_be_visible()
        expect(download.get_by_role("button", name=f"Discard the partial download of {FILE}")).to_have_count(0)
        assert partial_files(models, FILE) == []
        assert [p.name for p in (models / ".pull").iterdir() if p.name.startswith(FILE)] == []  # nothing of it
        assert not (models / FILE).exists()
        shot(page, "model-pull-discarded")


@pytest.mark.slow
def test_the_first_run_guide_downloads_and_uses_the_suggested_model(browser: Browser,
                                                                    served_pulls: Served, hf: HFServer) -> None:
    with opened(browser, served_pulls.url) as page:
        expect(page.locator("#first-run")).to_contain_text("small demonstration model")
        expect(page.locator("#first-run-machine")).to_contain_text("This machine: no GPU")
        suggestion = page.locator("#first-run-suggestion")
        expect(suggestion).to_contain_text("Suggested for it:")
        expect(suggestion).to_contain_text(re.compile(r"on the CPU, about \d+ words? a second"))
        expect(suggestion).to_contain_text("to download at 50 Mbit/s")
        expect(page.locator("#first-run-own")).to_contain_text("Have a GGUF file already?")
        shot(page, "first-run-guide")
        assert hf.requests == []  # the guide downloads nothing by itself

    # The suggestion is a catalog entry of 2 GB; the page is handed the local hub's tiny file in its place
    # (the server's answer rewritten in the browser), so the button's pull, check and Apply run for real.
    with opened(browser, served_pulls.url) as page:
        def tiny_suggestion(route: Route) -> None:
            answer = route.fetch()
            body = answer.json()
            body["recommended"].update(name=REF, title="Tiny Companion", size=CHAT_GGUF.stat().st_size,
                                       download_s=16)
            route.fulfill(response=answer, json=body)

        page.route("**/api/models/first-run", tiny_suggestion)
        page.reload()
        button = page.get_by_role("button", name="Download Tiny Companion and use it for chat")
        button.click()
        expect(page.locator("#first-run")).to_contain_text(f"Chat now runs on {FILE}: downloaded, checked and "
                                                           "applied.", timeout=120_000)
        expect(page.locator("#first-run-guide")).to_be_hidden()
        shot(page, "first-run-used")
        assert chat_model(served_pulls) == FILE
        # at the context the suggestion was sized for, not the demo model's 2,048 tokens
        assert httpx.get(f"{served_pulls.url}/api/settings").json()["roles"]["chat"]["n_ctx"] == 8192
        send(page, "Hello, new model")
        replied(page, 1)
        page.reload()  # no longer the demo model: the guide is gone
        expect(page.locator("#composer-input")).to_be_visible()
        expect(page.locator("#first-run")).to_be_hidden()


@pytest.fixture
def served_offline(tmp_path: Path) -> Iterator[Served]:
    """`lyra serve` whose Hugging Face address answers nothing (the discard port): every download fails."""
    folder = tmp_path / "models"
    folder.mkdir()
    for model in (CHAT_GGUF, EMBED_GGUF):
        (folder / model.name).symlink_to(require_file(model))
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_MODELS_DIR": str(folder),
           "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path / "hf-home"), "LYRA_GPU_DEVICES": CPU_ONLY}
    env.pop("HF_HUB_OFFLINE", None)
    with serve_lyra(tmp_path, env, CONFIG) as running:
        yield running


@pytest.mark.slow
def test_a_failed_download_is_said_beside_its_model_in_words(browser: Browser, served_offline: Served) -> None:
    entry = next(m for m in load_catalog() if m.name == "bge-small-en-v1.5")
    with opened(browser, served_offline.url) as page:
        page.locator(".tab[data-panel=settings]").click()
        item = page.locator("#model-catalog li.catalog-entry").filter(has_text=entry.title)
        item.get_by_role("button", name=f"Download {entry.title}", exact=True).click()
        failed = item.locator(".pull")
        expect(failed).to_contain_text("The download failed: no connection to 127.0.0.1", timeout=30_000)
        expect(failed).to_contain_text("nothing answered there")  # in words, not "(ConnectError)"
        expect(failed).not_to_contain_text("Error")
        expect(page.locator("#pulls")).not_to_contain_text(entry.file)  # not at the top of the catalog
        shot(page, "model-pull-failed-beside")
