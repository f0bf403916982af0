"""A server killed during an upload, and a forget right after its restart (found by the soak's kill rounds).

The recovery step (``store/files/registry.py``) leaves an upload younger than
``GRACE_S`` (60 s) alone unless its process is alone on the memory, and a
forget (``store/files/uploads.py: Uploads.settle``) refuses while an upload it did
not make is "busy". A dead server's upload, its flock free, is then taken for
a live import for a minute: every forget in that minute is refused with "an
import into this memory is running in another process" though no process
imports. The soak met it with a dream worker holding the memory beside the
server (3 of its 5 errors in an 8-minute run with 7 kills).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from lyra_local.store.files.dirlock import DirLock

from .conftest import CHAT_GGUF, EMBED_GGUF, require_file
from .crash_kit import Lyra, Point, import_file, in_thread, moments, snapshot, wait_for


@pytest.mark.slow
@pytest.mark.models
def test_a_forget_right_after_a_server_died_mid_upload_is_not_refused(tmp_path: Path) -> None:
    require_file(CHAT_GGUF)
    require_file(EMBED_GGUF)
    lyra = Lyra(tmp_path)
    lyra.start()
    beside = DirLock(lyra.data)  # another process with the memory open, as a dream worker or `lyra chat` is
    beside.acquire_shared()
    try:
        upload = tmp_path / "history.jsonl"
        import_file(upload, 2, 150)
        before = snapshot(lyra.data)
        thread, _ = in_thread(lambda: lyra.http_import(upload))
        assert wait_for(Point("upload stored", 0.2), moments(lyra.data, before), lambda: not thread.is_alive())
        lyra.stop(signal.SIGKILL)
        thread.join(timeout=60)
        lyra.start()
        refused = lyra.call("POST", "/api/forget", json={"matching": "a word nobody said"})
        assert refused.status_code == 200, f"a forget refused though no import runs: {refused.text}"
        assert not list((lyra.data / "imports").glob("*")), "the dead server's upload is still there"
    finally:
        beside.release()
        lyra.close()
