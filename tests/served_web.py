"""Driving a real ``lyra serve`` through its web API as the page does: an upload imported, a forced dream."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from .conftest import Served


def import_file(served: Served, path: Path, limit_s: float = 300) -> dict[str, Any]:
    """``path`` uploaded to PUT /api/import, its job waited for; the job's final status (done)."""
    job = httpx.put(f"{served.url}/api/import", params={"filename": path.name}, content=path.read_bytes(),
                    timeout=60).json()["job"]
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        status: dict[str, Any] = httpx.get(f"{served.url}/api/import/{job}").json()
        if status["status"] != "running":
            assert status["status"] == "done", status
            return status
        time.sleep(0.5)
    raise AssertionError(f"the import of {path.name} did not finish in {limit_s:.0f} s")


def dream(served: Served, limit_s: float) -> float:
    """A forced pass through the API, waited for; how long it took."""
    started = time.monotonic()
    assert httpx.post(f"{served.url}/api/dream").json()["started"]
    while time.monotonic() < started + limit_s:
        status = httpx.get(f"{served.url}/api/dream").json()
        if not status["running"] and status["last_pass"]:
            assert status["last_pass"]["status"] == "done", status["last_pass"]
            return time.monotonic() - started
        time.sleep(1)
    raise AssertionError(f"the dream pass took more than {limit_s:.0f} s")
