"""Imports running in this server: each one a background thread over one person's store, its progress read by
the page (``routes/transfer.py``), one at a time per person."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import LyraError
from ..llm.base import Embedder
from ..pause_points import pause_point
from ..store import Store
from ..store.files.uploads import Upload
from ..transfer.importer import import_source
from ..transfer.sources import open_source


@dataclass
class ImportJob:
    id: str
    filename: str
    person: str = ""  # whose import (jobs of others read as not found)
    status: str = "running"
    done: int = 0
    total: int = 0
    report: dict[str, Any] | None = None
    error: str | None = None
    started_at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class Into:
    """Whose memory an import goes into: their id (only they see the job), their store, the embedder, and the
    release of the lease on the models that embedder belongs to (called once the import ends)."""

    person: str
    store: Store
    embedder: Embedder
    release: Callable[[], None] = lambda: None


class ImportJobs:
    """Imports running in this server, by id; one at a time per person, in the order they came. Each person has
    a queue of their own, so one person's large import never leaves another's waiting at "0 of 0" (the
    embedder's own lock takes their batches in turn)."""

    def __init__(self) -> None:
        self.jobs: dict[str, ImportJob] = {}
        self._guard = threading.Lock()
        self._queues: dict[str, threading.Lock] = {}

    def _queue(self, person: str) -> threading.Lock:
        with self._guard:
            return self._queues.setdefault(person, threading.Lock())

    def start(self, upload: Upload, filename: str, fmt: str, into: Into) -> ImportJob:
        """Import in a thread into ``into``'s memory; its ``release`` is called when the import ends."""
        job = ImportJob(uuid.uuid4().hex[:12], filename, into.person)
        self.jobs[job.id] = job
        threading.Thread(target=self._run, args=(job, upload, fmt, into), name=f"import-{job.id}",
                         daemon=True).start()
        return job

    def _run(self, job: ImportJob, upload: Upload, fmt: str, into: Into) -> None:
        def progress(done: int, total: int) -> None:
            job.done, job.total = done, total
            if done:
                pause_point("import-batch")
            upload.check()  # stopped (a forget, the server stopping): end after the batch just committed

        try:
            with self._queue(job.person):
                upload.check()
                source = open_source(upload.path, fmt)  # type: ignore[arg-type]
                report, memory_note = import_source(into.store, into.embedder, source, progress=progress)
            job.report, job.status = {**report.summary(), "memory": memory_note}, "done"
        except Exception as exc:  # the thread must report, not vanish
            why = upload.stopped() or exc  # whatever a stopped import ran into (its file gone), the stop is why
            job.error = str(why) if isinstance(why, LyraError) else f"{type(why).__name__}: {why}"
            job.status = "failed"
        finally:
            into.store.uploads.end(upload)  # the upload is not kept: the memory is
            into.release()
