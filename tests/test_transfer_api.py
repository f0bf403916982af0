"""Import by upload (with progress), export and backup downloads, over HTTP."""

from __future__ import annotations

import io
import json
import sqlite3
import time
import zipfile
from pathlib import Path

from fastapi.testclient import TestClient

from .chatgpt_export import conversation, write_export
from .sse import sse_events


def wait(client: TestClient, job: str) -> dict:
    for _ in range(200):
        status = client.get(f"/api/import/{job}").json()
        if status["status"] != "running":
            return status
        time.sleep(0.05)
    raise AssertionError("the import did not finish")


def test_upload_imports_with_progress_and_keeps_no_copy(client: TestClient, tmp_path: Path) -> None:
    convs = [conversation(f"c{i}", f"chat {i}", [("user", f"hello {i}"), ("assistant", "hi")]) for i in range(30)]
    body = write_export(tmp_path / "export.zip", convs).read_bytes()
    job = client.put("/api/import", params={"filename": "../../etc/passwd.zip"}, content=body).json()["job"]
    events = sse_events(client.get(f"/api/import/{job}/events").text.splitlines())
    assert events[-1][0] == "done" and events[-1][1]["report"]["sessions_new"] == 30
    assert events[-1][1]["done"] == events[-1][1]["total"] == 60
    data_dir = Path(client.get("/api/settings").json()["data_dir"])
    assert list((data_dir / "imports").iterdir()) == []  # the upload is not kept
    assert len(client.get("/api/sessions").json()["sessions"]) == 30
    again = wait(client, client.put("/api/import", params={"filename": "export.zip"}, content=body).json()["job"])
    assert again["report"]["sessions_unchanged"] == 30 and again["report"]["messages"] == 0


def test_a_bad_upload_fails_with_its_reason(client: TestClient) -> None:
    job = client.put("/api/import", params={"filename": "x.zip"}, content=b"PK\x03\x04broken").json()["job"]
    status = wait(client, job)
    assert status["status"] == "failed" and "zip" in status["error"]
    assert client.put("/api/import", params={"filename": "x.zip"}, content=b"").status_code == 400
    assert client.get("/api/import/nope").status_code == 404


def test_export_zip_and_backup_download(client: TestClient, tmp_path: Path) -> None:
    body = write_export(tmp_path / "e.zip", [conversation("c1", "Café", [("user", "Grüße"), ("assistant", "Hallo")])])
    wait(client, client.put("/api/import", params={"filename": "e.zip"}, content=body.read_bytes()).json()["job"])
    client.put("/api/world", json={"content": "# Now"})
    export = client.get("/api/export")
    assert export.status_code == 200 and "attachment" in export.headers["content-disposition"]
    with zipfile.ZipFile(io.BytesIO(export.content)) as archive:
        assert sorted(archive.namelist()) == ["memory.json", "sessions.jsonl"]
        line = json.loads(archive.read("sessions.jsonl").decode().splitlines()[0])
        assert line["name"] == "Café" and [m["content"] for m in line["messages"]] == ["Grüße", "Hallo"]
        assert json.loads(archive.read("memory.json"))["world"][0]["content"] == "# Now"
    # the export zip imports back (into the same store: nothing new)
    back = wait(client, client.put("/api/import", params={"filename": "lyra.zip"}, content=export.content).json()["job"])
    assert back["report"]["sessions_unchanged"] == 1 and "not applied" in back["report"]["memory"]

    backup = client.get("/api/backup")
    assert backup.status_code == 200 and backup.content.startswith(b"SQLite format 3")
    path = tmp_path / "b.db"
    path.write_bytes(backup.content)
    assert sqlite3.connect(path).execute("SELECT name FROM sessions").fetchall() == [("Café",)]
    data_dir = Path(client.get("/api/settings").json()["data_dir"])
    assert not list(data_dir.glob("backup-*"))  # the temporary copy is gone
