"""Uploads waiting to be imported (``<data_dir>/imports/``), which a forget, a stop and a crash all reach.

An upload holds a person's words on disk, outside the database, for as long
as its import runs. Each is a ``files.locked_file``: its server holds a flock
on it while it lives, so the recovery step removes it once that server ended,
however it ended (``files.sweep_leftovers``). It is unlinked when its import
ends, when the memory closes (a normal stop), and by a forget:

* a forget first stops this process's imports and unlinks their files: what
  an import committed stays (whole conversations: ``transfer/importer.py``),
  the forget then removes what it names from it, and importing the same file
  again adds only what is still missing, nothing twice;
* a forget refuses while another process imports an upload into the same
  memory: it could neither reach that upload nor keep that import from
  writing the text again after it.

``lyra import PATH`` reads the person's own file where it lies and leaves
nothing here, so it is not seen: a forget by text while it runs removes what
it committed so far, and a batch it commits after may hold the text again (the
forget ledger keeps its turns' portable ids, so a later import does not bring
back forgotten turns, but new text matching the words is new text).

This module never runs SQL; it decides nothing about what an import stores.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ...errors import LyraError
from ...fsutil import private_dir
from .dirlock import holder_pids
from .registry import CREATING, locked_file, writer_ended

log = logging.getLogger(__name__)
FOLDER = "imports"
STOP_WAIT_S = 30.0  # how long a forget waits for a stopped import to finish the batch it is writing


class ImportInProgress(LyraError):
    """An import is writing into the memory, and a forget now could not reach all of what it brings."""

    status_code = 409


class UploadStopped(LyraError):
    """An upload (or its import) was stopped: by a forget, or because the memory closed."""

    status_code = 409


@dataclass(eq=False)
class Upload:
    """One upload: its locked file, and whether its import started, was stopped, or ended."""

    path: Path
    file: BinaryIO
    _close: contextlib.ExitStack
    importing: bool = False
    why_stopped: str | None = None
    ended: threading.Event = field(default_factory=threading.Event)

    def stopped(self) -> UploadStopped | None:
        """Why the upload was stopped, as the error its import ends with; None while it was not."""
        if self.why_stopped is None:
            return None
        return UploadStopped(f"stopped: {self.why_stopped}",
                             hint="what was imported stays; importing the same file again adds only the rest")

    def check(self) -> None:
        """Raise ``UploadStopped`` once the upload was stopped (the import thread calls it between batches)."""
        stopped = self.stopped()
        if stopped is not None:
            raise stopped


class Uploads:
    """This process's uploads into one data directory (the ``Store`` owns one)."""

    def __init__(self, data_dir: Path) -> None:
        self.folder = data_dir / FOLDER
        self._live: list[Upload] = []
        self._lock = threading.Lock()

    def create(self, filename: str) -> Upload:
        """A new upload's locked file, named after ``filename`` (never a path the request gives); call ``end``
        when it is imported or refused."""
        private_dir(self.folder)
        safe = re.sub(r"[^\w.-]", "_", Path(filename).name).lstrip(".")[-120:] or "upload"
        path = self.folder / f"{uuid.uuid4().hex}-{safe}"
        stack = contextlib.ExitStack()
        upload = Upload(path, stack.enter_context(locked_file(path)), stack)
        with self._lock:
            self._live.append(upload)
        return upload

    def begin_import(self, upload: Upload) -> None:
        """The upload is whole and its import starts now, unless it was stopped meanwhile."""
        with self._lock:
            upload.check()
            upload.importing = True

    def end(self, upload: Upload) -> None:
        """The upload's import ended (or it never started): its file goes (idempotent)."""
        with self._lock:
            if upload in self._live:
                self._live.remove(upload)
        upload._close.close()  # unlinks, then drops the flock (a second close does nothing)
        upload.ended.set()

    def stop_all(self, why: str, wait_s: float = STOP_WAIT_S) -> list[Upload]:
        """Stop every upload and import of this process and unlink their files now; wait (up to ``wait_s``)
        for the imports to end. Returns the imports still running then."""
        with self._lock:
            live = list(self._live)
            for upload in live:
                if upload.why_stopped is None:
                    upload.why_stopped = why
                upload.path.unlink(missing_ok=True)  # an import reading it keeps its open file until it ends
        running = [u for u in live if u.importing]
        for upload in running:
            upload.ended.wait(wait_s)  # the waits overlap: one import runs at a time, the rest are queued
        return [u for u in running if not u.ended.is_set()]

    def settle(self, wait_s: float = STOP_WAIT_S) -> None:
        """Before a forget: no upload may hold words the forget cannot reach. This process's imports are
        stopped and their files unlinked; an upload whose server ended is removed; one another live process
        is importing makes the forget refuse (``ImportInProgress``)."""
        running = self.stop_all("a forget ran meanwhile", wait_s)
        if running:
            raise ImportInProgress(f"the import of {', '.join(u.path.name for u in running)} is still finishing "
                                   "the batch it was writing", hint="forget again in a moment: the import was "
                                                                    "stopped and its file removed")
        with self._lock:
            ours = {u.path for u in self._live}  # uploads begun since: not this forget's concern
        busy: list[Path] = []
        for path in sorted(self.folder.iterdir()) if self.folder.is_dir() else []:
            if path in ours or path.name.endswith(CREATING):  # a name not taken yet (microseconds): no import
                continue
            if writer_ended(path):
                path.unlink(missing_ok=True)
                log.warning("removed %s, an upload whose server ended, before forgetting", path)
            elif path.exists():
                busy.append(path)
        if busy:
            pids = sorted(set().union(*(holder_pids(p) for p in busy)) - {os.getpid()})
            who = ", ".join(f"pid {pid}" for pid in pids) or "another process"
            raise ImportInProgress(f"an import into this memory is running in {who}",
                                   hint="a forget now could not reach its uploaded file, nor keep it from writing "
                                        "the text again: wait until it ends, or forget from that server's page "
                                        "(which stops the import first)")
