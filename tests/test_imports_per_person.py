"""One person's import never waits behind another's: imports queue per person.

The real `lyra serve` with its real embedder, held by ``LYRATEST_PAUSE_AT=import-batch`` once an import has
committed its first batch (``pause_points.py``): Ada's import stops there, holding her queue, and Ben's, sent
after it, must still get to its own first batch.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from .conftest import MODELS_DIR, base_env, serve_lyra
from .crash_kit import import_file

pytestmark = [pytest.mark.slow, pytest.mark.models]
WAIT_S = 120.0


def started(client: httpx.Client, path: Path) -> str:
    answer = client.put("/api/import", params={"filename": path.name, "format": "lyra"}, content=path.read_bytes())
    assert answer.status_code == 202, answer.text
    return str(answer.json()["job"])


def progressed(client: httpx.Client, job: str) -> bool:
    """Whether the job committed a batch, waiting up to ``WAIT_S`` (it pauses there, holding its queue)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if client.get(f"/api/import/{job}").json()["done"] > 0:
            return True
        time.sleep(0.2)
    return False


def test_one_persons_import_does_not_wait_behind_anothers(tmp_path: Path) -> None:
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_MODELS_DIR": str(MODELS_DIR),
           "LYRATEST_PAUSE_AT": "import-batch"}
    with serve_lyra(tmp_path, env, '[companion]\nuser_name = "Ada"\n[dream]\nenabled = false\n') as served, \
            httpx.Client(base_url=served.url, timeout=WAIT_S) as ada, \
            httpx.Client(base_url=served.url, timeout=WAIT_S) as ben:
        assert ada.put("/api/me/secret", json={"secret": "ada-password-1"}).status_code == 200
        assert ada.post("/api/people", json={"name": "Ben", "secret": "ben-password-1"}).status_code == 200
        assert ben.post("/api/auth/login", json={"name": "Ben", "secret": "ben-password-1"}).status_code == 200
        import_file(tmp_path / "ada.jsonl", 2, 150)
        import_file(tmp_path / "ben.jsonl", 1, 10)
        adas = started(ada, tmp_path / "ada.jsonl")
        assert progressed(ada, adas)  # and now held there, in the middle of Ada's import
        assert progressed(ben, started(ben, tmp_path / "ben.jsonl")), "Ben's import waited behind Ada's"
        served.proc.kill()  # the imports stay paused until the process ends
