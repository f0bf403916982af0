"""Downloads the server runs for the web UI (Settings → Models, the first-run guide): one job per model file.

Each job is one ``pull.pull`` in a thread of its own; its progress is kept here
for the page to poll, and it ends ``done`` (with the file's final name),
``failed`` (the error's message and hint) or ``cancelled``. Cancel sets the
``threading.Event`` that ``pull`` takes: the transfer stops at its next chunk
and keeps its partial file in ``models_dir/.pull/``, which the next pull of the
same file resumes, or ``PullJobs.discard`` deletes. A second pull of a file that
is still being pulled joins the first rather than racing it to the same partial
and the same final name.

This module never starts a download by itself: only ``PullJobs.start``, which a
person's click reaches, does. ``stop_all`` (the server stopping) cancels every
running job the same way, so a restart resumes where it stopped.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import Conflict, LyraError, NotFound
from ..oserrors import storage_error
from .catalog import PullTarget
from .pull import AlreadyPulling, PullCancelled, discard, partial_bytes, pull
from .pull_stream import Progress

log = logging.getLogger(__name__)

State = Literal["running", "done", "failed", "cancelled"]
Puller = Callable[..., Path]  # ``pull.pull``'s signature; a test may hand in its own wrapper of it
KEEP_FINISHED = 32  # finished jobs remembered for the page (the oldest beyond these are forgotten)


@dataclass
class PullJob:
    """One file being (or having been) pulled; ``progress`` and ``state`` change under the jobs' lock."""

    id: str
    target: PullTarget
    models_dir: Path
    state: State = "running"
    progress: Progress | None = None
    file: str | None = None  # the final file's name in models_dir, once done
    error: dict[str, str | None] | None = None
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def view(self) -> dict[str, Any]:
        """The job as the API answers it."""
        target, progress = self.target, self.progress
        entry = target.entry
        return {
            "id": self.id, "state": self.state,
            "cancelling": self.state == "running" and self.cancel.is_set(),
            "name": entry.name if entry is not None else f"{target.repo}:{target.file}",
            "title": entry.title if entry is not None else target.local_name,
            "role": entry.role if entry is not None else None,
            "repo": target.repo, "file": target.file, "revision": target.revision,
            "done": progress.done if progress else 0,
            "total": progress.total if progress and progress.total is not None else target.size,
            "rate": progress.rate if progress else 0.0,
            "eta_s": progress.eta_s if progress else None,
            "path_name": self.file, "error": self.error, "partial": self.partial_size(),
            "started_at": self.started_at, "ended_at": self.ended_at,
        }

    def partial_size(self) -> int:
        """The bytes an ended, unfinished job left in ``.pull/`` for a resume (0 while it runs: it grows, and the
        page shows ``done``), so the page can offer to resume or discard them."""
        if self.state in ("running", "done"):
            return 0
        return partial_bytes(self.models_dir, self.target.file)


class PullJobs:
    """The pulls of one server, by id; at most one running pull per file name."""

    def __init__(self, puller: Puller = pull, *, endpoint: str | None = None) -> None:
        """``endpoint``: the Hugging Face address (None: ``HF_ENDPOINT``, else huggingface.co, as ``pull`` does)."""
        self._pull = puller
        self._endpoint = endpoint
        self._lock = threading.Lock()
        self._jobs: dict[str, PullJob] = {}
        self._stopped = False

    def start(self, target: PullTarget, models_dir: Path) -> tuple[PullJob, bool]:
        """Start pulling ``target`` into ``models_dir`` in a thread; returns the job and whether it joined one
        already running for that file. Raises ``Conflict`` when the same file name is being pulled from another
        repository or revision (both would end under one name), or when the server is stopping."""
        with self._lock:
            if self._stopped:
                raise Conflict("the server is stopping; no download starts now", hint="start it again after")
            running = self._running_for(target.local_name)
            if running is not None:
                # the same file of the same repository at the same revision; "a/M.gguf" and "b/M.gguf" of one
                # repository are two files that would end under one name (repository names ignore case)
                same = (running.target.repo.lower(), running.target.file, running.target.revision) == (
                    target.repo.lower(), target.file, target.revision)
                if not same or running.models_dir != models_dir:
                    raise Conflict(f"{target.local_name} is being downloaded from {running.target.ref} now",
                                   hint="wait for that download to end, or cancel it, then try again")
                return running, True
            job = PullJob(uuid.uuid4().hex[:12], target, models_dir)
            self._jobs[job.id] = job
            self._forget_old()
            job.thread = threading.Thread(target=self._run, args=(job,), name=f"pull-{job.id}", daemon=True)
            job.thread.start()
        log.info("pulling %s from %s into %s", target.file, target.repo, models_dir)
        return job, False

    def get(self, job_id: str) -> PullJob:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise NotFound(f"no download {job_id!r} in this server",
                           hint="GET /api/models/pulls lists them; a restart forgets finished ones")
        return job

    def all(self) -> list[PullJob]:
        """Every job remembered, oldest first."""
        with self._lock:
            return sorted(self._jobs.values(), key=lambda j: j.started_at)

    def cancel(self, job_id: str) -> PullJob:
        """Ask a running job to stop (its partial file is kept for a resume); a finished one is left as it is."""
        job = self.get(job_id)
        job.cancel.set()
        return job

    def discard(self, target: PullTarget, models_dir: Path) -> int:
        """Delete ``target``'s partial downloads (``pull.discard``) and return the bytes freed; refused
        (``AlreadyPulling``) while this server pulls that file, or another process (``lyra models pull``) does.
        Under the jobs' lock, so no Resume of this server starts between the check and the deletion."""
        with self._lock:
            running = self._running_for(target.local_name)
            if running is not None:
                raise AlreadyPulling(f"the partial download of {target.local_name} cannot be discarded while it "
                                     "downloads", hint="cancel that download first, then discard it")
            freed = discard(target, models_dir)
        log.info("discarded the partial download of %s in %s (%d bytes)", target.local_name, models_dir, freed)
        return freed

    def wait(self, job_id: str, timeout_s: float) -> PullJob:
        """The job once it has ended (or as it stands after ``timeout_s``)."""
        job = self.get(job_id)
        if job.thread is not None:
            job.thread.join(timeout_s)
        return job

    def stop_all(self, wait_s: float = 10.0) -> None:
        """At shutdown: cancel every running pull and give them ``wait_s`` to stop; no new one starts."""
        with self._lock:
            self._stopped = True
            running = [job for job in self._jobs.values() if job.state == "running"]
        for job in running:
            job.cancel.set()
        deadline = time.monotonic() + wait_s
        for job in running:
            if job.thread is not None:
                job.thread.join(max(0.0, deadline - time.monotonic()))

    def _running_for(self, name: str) -> PullJob | None:
        return next((j for j in self._jobs.values() if j.state == "running" and j.target.local_name == name), None)

    def _forget_old(self) -> None:
        finished = sorted((j for j in self._jobs.values() if j.state != "running"), key=lambda j: j.started_at)
        for job in finished[:max(0, len(finished) - KEEP_FINISHED)]:
            del self._jobs[job.id]

    def _run(self, job: PullJob) -> None:
        def progress(now: Progress) -> None:
            job.progress = now  # one reference swapped: a reader sees the old or the new, never half

        state: State
        error: dict[str, str | None] | None
        try:
            path = self._pull(job.target, job.models_dir, progress=progress, cancel=job.cancel,
                              endpoint=self._endpoint)
        except PullCancelled as exc:  # its message says how far it came and that the partial file is kept
            state, error = "cancelled", _error(exc)
        except LyraError as exc:
            state, error = "failed", _error(exc)
        except OSError as exc:  # a full disk or a folder it may not write, named as the store names them
            named = storage_error(exc, job.models_dir, "models_dir ($LYRA_MODELS_DIR)")
            if named is None:
                log.error("the download of %s failed", job.target.file, exc_info=exc)
            state, error = "failed", _error(named) if named else _unexpected(exc)
        except Exception as exc:  # the job says so; the server goes on
            log.error("the download of %s failed", job.target.file, exc_info=exc)
            state, error = "failed", _unexpected(exc)
        else:
            state, error = "done", None
            job.file = path.name
        with self._lock:
            job.state, job.error, job.ended_at = state, error, time.time()
        log.info("download of %s %s%s", job.target.file, state, f": {error['message']}" if error else "")


def _error(exc: LyraError) -> dict[str, str | None]:
    return {"message": exc.message, "type": type(exc).__name__, "hint": exc.hint}


def _unexpected(exc: BaseException) -> dict[str, str | None]:
    return {"message": f"the download failed ({type(exc).__name__}: {exc})", "type": "InternalError",
            "hint": "try again; the server's log has the details"}


