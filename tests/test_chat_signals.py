"""`lyra chat --off-the-record` ended by its terminal closing (SIGHUP) or by SIGTERM still forgets everything.

The default action of both signals kills the process on the spot: the cleanup
that deletes the off-the-record conversation never ran, and its turns stayed
in lyra.db. A real process, the real tiny models, and the data directory read
byte by byte afterwards.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import CHAT_GGUF, MODELS_DIR, base_env, require_file

PLANTED = "quokkaturmeric"  # a word that appears nowhere else


def stored_turns(db: Path, word: str) -> int:
    """How many stored turns contain ``word`` (read-only; 0 while the database does not exist yet)."""
    if not db.is_file():
        return 0
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
    except sqlite3.Error:
        return 0
    try:
        return int(conn.execute("SELECT count(*) FROM exchanges WHERE content LIKE ?", (f"%{word}%",)).fetchone()[0])
    except sqlite3.Error:  # not migrated yet, or busy
        return 0
    finally:
        conn.close()


@pytest.mark.slow
@pytest.mark.models
@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_off_the_record_chat_ended_by_a_signal_leaves_nothing(tmp_path: Path, sig: signal.Signals) -> None:
    require_file(CHAT_GGUF)
    data = tmp_path / "data"
    config = tmp_path / "lyra.toml"
    config.write_text("")
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(data), "LYRA_MODELS_DIR": str(MODELS_DIR),
           "LYRA_DREAM__ENABLED": "false"}
    log = tmp_path / "chat.log"
    with log.open("w") as out:
        chat = subprocess.Popen([sys.executable, "-m", "lyra_local", "--config", str(config), "chat",
                                 "--off-the-record"], stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
                                env=env, text=True)
    try:
        assert chat.stdin is not None
        chat.stdin.write(f"My locker code is {PLANTED}.\n")
        chat.stdin.flush()  # stdin stays open: the chat waits for more, as in a terminal
        deadline = time.monotonic() + 120
        while stored_turns(data / "lyra.db", PLANTED) == 0:
            assert chat.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the turn was never stored:\n" + log.read_text()
            time.sleep(0.1)
        chat.send_signal(sig)
        code = chat.wait(timeout=60)
    finally:
        if chat.poll() is None:
            chat.kill()
            chat.wait(timeout=10)
        if chat.stdin is not None:
            chat.stdin.close()
    holding = [path.name for path in data.rglob("*") if path.is_file() and PLANTED.encode() in path.read_bytes()]
    assert holding == []
    conn = sqlite3.connect(f"file:{data / 'lyra.db'}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM exchanges").fetchone()[0] == 0
    finally:
        conn.close()
    assert code == 128 + sig, f"exit {code}:\n{log.read_text()}"  # ended by the signal, through the cleanup
    assert "Traceback" not in log.read_text()
