"""Pull one GGUF file from Hugging Face into ``models_dir``, verified before it becomes a model.

Only a person's request reaches this module (``lyra models pull``, the Download
button in Settings → Models): nothing at start-up or in the background calls it,
so Lyra never touches the network on its own.

The transfer is huggingface_hub's own: ``get_hf_file_metadata`` for the HEAD
(size, sha256, the commit, redirects) and ``http_get`` for the bytes (a Range
request to resume, retries on a dropped connection, ``HF_ENDPOINT``,
``HF_HUB_OFFLINE`` and the saved token honoured). Not ``hf_hub_download``: from
huggingface_hub 1.x its download writes to a process-unique ``.incomplete`` file
that it deletes on any failure (huggingface_hub PR 4228), so a 5 GB download cut
at 90 % would start again from nothing. Here the partial file is ours, in
``models_dir/.pull/`` (a dot folder: the model list reads only ``*.gguf`` directly
in ``models_dir``), named by the sha256 it must end with, so a resume never mixes
two versions of one file.

The stream's guards (the GGUF check at the first bytes, the progress meter that
also cancels) are ``pull_stream.py``'s.

The order is the point: the free disk space is checked before a byte is fetched;
the first bytes must be GGUF's magic, so an HTML page (a captive portal, a proxy's
error page) is refused at once; the whole file's sha256 (the catalog's, else the
server's LFS hash) and its GGUF header are checked before it takes its final name.
A file that fails is deleted and the error says so; a transfer that stops (no
connection, Ctrl-C, Cancel) keeps its partial file for the next pull to resume, or
for ``discard`` to delete when the person gives it up (a 5 GB partial is not left
on the disk for good).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, cast
from urllib.parse import urlsplit

import filelock
import httpx2
from huggingface_hub import constants as hf_constants
from huggingface_hub import get_hf_file_metadata, hf_hub_url
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.file_download import HfFileMetadata, http_get
from huggingface_hub.utils._headers import build_hf_headers

from .. import __version__
from ..errors import LyraError
from ..fsutil import sha256_file
from .catalog import PullTarget
from .fetch import read_manifest, write_manifest
from .gguf_header import ModelFileInvalid, read_gguf
from .on_disk import file_size, size_now
from .pull_stream import GGUFOnly, NotGGUFStream, Report, Stopped, meter_class, starts_as_gguf

STAGING = ".pull"
DEFAULT_ENDPOINT = "https://huggingface.co"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_HEAD_TIMEOUT_S = 10.0


class PullError(LyraError):
    """A pull that could not finish: the server's answer, a file in the way, a lock held by another pull."""

    status_code = 502


class NoConnection(PullError):
    """Hugging Face (or ``HF_ENDPOINT``) cannot be reached, or ``HF_HUB_OFFLINE`` is set."""

    status_code = 503


class NotEnoughSpace(PullError):
    """The disk holding ``models_dir`` has less free space than the download needs (checked before it starts)."""

    status_code = 507


class ChecksumMismatch(PullError):
    """The file's sha256 is not the one expected: the file was deleted."""


class NotAGGUF(PullError):
    """What came is not a GGUF model (an HTML page, another kind of file): refused, nothing kept."""


class AlreadyPulling(PullError):
    """Another pull (the CLI, the server) is downloading the same file into the same folder now."""

    status_code = 409


class PullCancelled(PullError):
    """The person stopped the download (Cancel, Ctrl-C): the partial file is kept for a resume."""

    status_code = 409


def pull(target: PullTarget, models_dir: Path, *, progress: Report | None = None,
         cancel: threading.Event | None = None, endpoint: str | None = None) -> Path:
    """Download ``target`` into ``models_dir`` (resuming a partial one), verify it, and return its final path.

    A file already there with the expected sha256 is returned without a download (without a connection when the
    catalog or an earlier pull recorded its sha256). ``endpoint``: the Hugging Face address (None: ``HF_ENDPOINT``
    read now, else huggingface.co)."""
    name = _final_name(target)
    final = models_dir / name
    host = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    url = hf_hub_url(target.repo, target.file, revision=target.revision, endpoint=host)
    known = target.sha256 or _recorded_sha256(models_dir, target)
    hashes = _Hashes()
    if known and final.is_file() and hashes.of(final) == known:
        return final
    if _offline():
        raise _no_connection(target, url, known, "HF_HUB_OFFLINE is set", models_dir)
    staging = models_dir / STAGING
    staging.mkdir(parents=True, exist_ok=True)
    with _only_pull_of(staging / f"{name}.lock", name):
        meta = _metadata(target, url, host, lambda why: _no_connection(target, url, known, why, models_dir))
        expected = _expected_sha256(target, meta, url)
        if final.is_file():
            if hashes.of(final) != expected:
                raise PullError(f"{final} exists and is not the file asked for (its sha256 is {hashes.of(final)}, "
                                f"{target.repo}:{target.file} has {expected})",
                                hint="move that file away or delete it, then pull again")
        else:
            partial = staging / f"{name}.{expected[:16]}.partial"
            _drop_other_partials(staging, name, keep=partial)
            size = meta.size if meta.size is not None else target.size
            _download(meta, url, partial, size, name, progress, cancel)
            _verify(partial, expected, name, url)
            _rename_durably(partial, final)
        _record(models_dir, name, target, meta, expected)
    return final


def discard(target: PullTarget, models_dir: Path) -> int:
    """Delete the partial downloads of ``target``'s file in ``models_dir/.pull/`` and return the bytes freed (0: none
    there). Only that file's (``partial_files``); the model itself, once downloaded, is never touched.

    Under the lock a pull of that file holds, so a pull running now (``lyra models pull``, Settings' Download) is
    refused with ``AlreadyPulling`` rather than having its file deleted under it; the lock file goes too, as the
    file's last trace in ``.pull/`` (filelock retries an acquire that met a lock file deleted under it)."""
    name = _final_name(target)
    staging = models_dir / STAGING
    if not staging.is_dir():
        return 0
    lock_path = staging / f"{name}.lock"
    with _only_pull_of(lock_path, name, refused=f"the partial download of {name} cannot be discarded while a pull "
                                                "of it runs (lyra models pull, or Settings → Models)",
                       hint="cancel that download first (Cancel, or Ctrl-C), then discard it"):
        freed = 0
        for partial in _partials(staging, name):
            freed += size_now(partial)
            partial.unlink(missing_ok=True)
        lock_path.unlink(missing_ok=True)
    return freed


def partial_files(models_dir: Path, file: str) -> list[Path]:
    """The partial downloads of ``file`` kept in ``models_dir/.pull/`` (what a next pull resumes)."""
    return _partials(models_dir / STAGING, PurePosixPath(file).name)


def partial_bytes(models_dir: Path, file: str) -> int:
    """The bytes of ``file`` downloaded so far and kept for a resume (0: none): what a resume goes on from and a
    discard frees."""
    return sum(size_now(path) for path in partial_files(models_dir, file))


def _partials(staging: Path, name: str) -> list[Path]:
    """``name``'s partials, one per version (``NAME.<sha256[:16]>.partial``); a glob alone would take another
    file's too (``a.gguf.*.partial`` matches ``a.gguf.x.gguf``'s)."""
    if not staging.is_dir():
        return []
    mine = re.compile(re.escape(name) + r"\.[0-9a-f]{16}\.partial")
    return sorted(path for path in staging.glob(f"{glob.escape(name)}.*.partial") if mine.fullmatch(path.name))


def _final_name(target: PullTarget) -> str:
    """The file's name in ``models_dir`` (a repository's subfolder is dropped); only ``.gguf`` is a model."""
    name = target.local_name
    if not name.lower().endswith(".gguf") or name.startswith("."):
        raise NotAGGUF(f"{target.repo}:{target.file} is not a GGUF file (its name does not end in .gguf)",
                       hint="pick the repository's .gguf file: its Files tab lists them")
    return name


def _offline() -> bool:
    """``HF_HUB_OFFLINE``, read now (huggingface_hub reads it once, at its import)."""
    value = os.environ.get("HF_HUB_OFFLINE", "")
    return hf_constants.is_offline_mode() or value.strip().upper() in ("1", "ON", "YES", "TRUE")


def network_failure(exc: Exception) -> str:
    """What went wrong on the network, in words ("nothing answered", "it took too long"), never the name of a
    library's exception class ("ConnectError")."""
    if isinstance(exc, httpx2.TimeoutException):
        return "it took too long to answer"
    if isinstance(exc, httpx2.ConnectError):
        return "nothing answered there"
    if isinstance(exc, httpx2.ProxyError):
        return "the proxy refused it"
    return "the network failed"


def _no_connection(target: PullTarget, url: str, sha256: str | None, why: str, models_dir: Path) -> NoConnection:
    """What a person offline needs to finish by hand: where to get the file, and how to check it."""
    host = urlsplit(url).hostname or url
    sha = sha256 or "not known here (the repository's file page shows it)"
    return NoConnection(
        f"no connection to {host} ({why}): put the file in models/ by hand — its address is {url}, "
        f"its sha256 is {sha}",
        hint=f"on a connected machine, download it (a browser, or `curl -L -O {url}`), check `sha256sum "
             f"{target.local_name}`, and copy it into {models_dir}; or pull again once online")


def _metadata(target: PullTarget, url: str, host: str, offline: Callable[[str], NoConnection]) -> HfFileMetadata:
    """The HEAD of the file, each failure named for a person: no connection (``offline(why)``), no such
    repository, file or revision, a gated repository, or an answer that is not Hugging Face's (a captive portal)."""
    where = f"{target.repo}:{target.file}"
    try:
        meta = get_hf_file_metadata(url, timeout=_HEAD_TIMEOUT_S, endpoint=host, library_name="lyra-local",
                                    library_version=__version__)
    except OfflineModeIsEnabled as exc:
        raise offline("HF_HUB_OFFLINE is set") from exc
    except httpx2.TransportError as exc:
        raise offline(network_failure(exc)) from exc
    except GatedRepoError as exc:
        raise PullError(f"{target.repo} is gated: its licence must be accepted before a download",
                        hint="accept it on the repository's page, then log in (`hf auth login`, or set HF_TOKEN) "
                             "and pull again") from exc
    except RepositoryNotFoundError as exc:
        raise PullError(f"no repository {target.repo} at {host} (or it is private)",
                        hint="check the name (owner/repository, as on its page); a private one needs HF_TOKEN") \
            from exc
    except RevisionNotFoundError as exc:
        raise PullError(f"{target.repo} has no revision {target.revision!r}",
                        hint="use a branch name or a commit from the repository's history") from exc
    except RemoteEntryNotFoundError as exc:
        raise PullError(f"{target.repo} has no file {target.file!r} at {target.revision}",
                        hint="check the file name in the repository's Files tab (names are case-sensitive)") \
            from exc
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "an error"
        raise PullError(f"{host} answered {status} for {where}",
                        hint="try again later; a 5xx is the server's trouble, not yours") from exc
    if meta.commit_hash is None or meta.etag is None:
        raise NotAGGUF(f"{host} answered, but not as Hugging Face does (no commit or ETag for {where}): "
                       "a captive portal or a proxy's page?",
                       hint="log in to the network in a browser, or set HF_ENDPOINT to a Hugging Face mirror")
    return meta


def _expected_sha256(target: PullTarget, meta: HfFileMetadata, url: str) -> str:
    """The catalog's sha256, else the server's LFS hash; both known and different refuses before the download."""
    served = (meta.etag or "").lower()
    served_sha = served if _SHA256.fullmatch(served) else None
    if target.sha256 and served_sha and served_sha != target.sha256.lower():
        raise ChecksumMismatch(
            f"{url} is not the file the catalog names: the server's sha256 is {served_sha}, the catalog's "
            f"{target.sha256}; nothing was downloaded",
            hint="the repository changed that file: pin the catalog's revision, or pull REPO:FILE to take the new one")
    expected = (target.sha256 or served_sha or "").lower()
    if not expected:
        raise PullError(f"{url} comes with no sha256 (not an LFS file) and the catalog has none: it cannot be "
                        "verified, so it is not downloaded", hint="GGUF files on Hugging Face are LFS files: check "
                                                                  "the repository and file name")
    return expected


@contextmanager
def _only_pull_of(lock_path: Path, name: str, *, refused: str | None = None, hint: str | None = None,
                  ) -> Iterator[None]:
    """One pull of a file at a time (the CLI and the server share a models_dir): a second one is refused, not
    queued, since both would write the same partial file; ``discard`` takes the same lock. ``refused``/``hint``:
    the refusal's words (default: a pull's)."""
    lock = filelock.FileLock(str(lock_path), timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout as exc:
        raise AlreadyPulling(
            refused or f"{name} is being downloaded by another pull (lyra models pull, or Settings → Models)",
            hint=hint or "wait for it to end, or stop it; then pull again") from exc
    try:
        yield
    finally:
        lock.release()


def _drop_other_partials(staging: Path, name: str, *, keep: Path) -> None:
    """A partial of another version of the file (the repository changed it) can never be resumed."""
    for other in _partials(staging, name):
        if other != keep:
            other.unlink(missing_ok=True)


def _download(meta: HfFileMetadata, url: str, partial: Path, size: int | None, name: str,
              progress: Report | None, cancel: threading.Event | None) -> None:
    """Fetch what ``partial`` lacks (all of it for a new one); disk space first, GGUF's magic at the first bytes."""
    have = partial.stat().st_size if partial.is_file() else 0
    if have and (size is not None and have > size or not starts_as_gguf(partial)):
        partial.unlink()  # longer than the file, or not its beginning: nothing in it can be resumed
        have = 0
    _check_space(partial.parent, (size or 0) - have, name)
    if cancel is not None and cancel.is_set():
        raise _cancelled(name, partial, size)
    headers = build_hf_headers(library_name="lyra-local", library_version=__version__)
    if urlsplit(meta.location).hostname != urlsplit(url).hostname:
        headers.pop("authorization", None)  # a CDN's signed address: the person's token stays with the Hub
    meter = meter_class(progress, cancel)
    try:
        with partial.open("ab") as raw:
            http_get(meta.location, cast(BinaryIO, GGUFOnly(raw)), resume_size=have, headers=headers,
                     expected_size=size, displayed_filename=name, tqdm_class=cast(Any, meter))
    except Stopped:
        raise _cancelled(name, partial, size) from None
    except NotGGUFStream as exc:
        partial.unlink(missing_ok=True)
        raise NotAGGUF(f"{url} sent {exc.what}, not a GGUF model: refused, nothing was kept",
                       hint="a captive portal or a proxy's page: log in to the network in a browser, "
                            "then pull again") from None
    except httpx2.TransportError as exc:
        # Cancel is seen only when a chunk arrives: a transfer that stalls, then fails after huggingface_hub's
        # retries, was still stopped by the person and ends as they asked, not as a lost connection.
        if cancel is not None and cancel.is_set():
            raise _cancelled(name, partial, size) from None
        raise _no_connection_during(meta, partial, name, exc) from exc
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "an error"
        raise PullError(f"{urlsplit(meta.location).hostname} answered {status} during the download of {name}",
                        hint=f"pull again: the {file_size(size_now(partial))} already downloaded are kept and "
                             "resumed") from exc
    except OSError as exc:
        if "Consistency check failed" not in str(exc):
            raise  # a full disk, a folder it may not write: the caller names it
        kept = file_size(size_now(partial))
        raise PullError(f"the transfer of {name} ended early ({kept} of {file_size(size or 0)})",
                        hint="pull again: what was downloaded is kept and resumed") from exc


def _no_connection_during(meta: HfFileMetadata, partial: Path, name: str, exc: Exception) -> NoConnection:
    return NoConnection(f"the connection dropped during the download of {name} ({network_failure(exc)}) at "
                        f"{file_size(size_now(partial))}: the partial file is kept in {partial.parent}",
                        hint="pull again once the connection is back: it resumes where it stopped")


def _cancelled(name: str, partial: Path, size: int | None) -> PullCancelled:
    total = f" of {file_size(size)}" if size else ""
    kept = file_size(size_now(partial))
    return PullCancelled(f"the download of {name} stopped at {kept}{total}; the partial file is kept in "
                         f"{partial.parent}",
                         hint="pull it again to resume where it stopped, or discard it to free that space")


def _check_space(folder: Path, needed: int, name: str) -> None:
    free = shutil.disk_usage(folder).free
    if needed > free:
        raise NotEnoughSpace(f"{name} needs {file_size(needed)} more on the disk holding {folder.parent}, which has "
                             f"{file_size(free)} free; nothing was downloaded",
                             hint="free some space, or set models_dir (LYRA_MODELS_DIR) to a bigger disk")


def _verify(partial: Path, expected: str, name: str, url: str) -> None:
    """The whole file's sha256, then its GGUF header; a file failing either is deleted (resuming it cannot help)."""
    actual = sha256_file(partial)
    if actual != expected:
        partial.unlink(missing_ok=True)
        raise ChecksumMismatch(f"{name} downloaded with sha256 {actual}, expected {expected}: the file was deleted",
                               hint=f"pull again (a transfer or disk error?); if it repeats, {url} is not the "
                                    "file the catalog names")
    try:
        read_gguf(partial)
    except ModelFileInvalid as exc:
        partial.unlink(missing_ok=True)
        raise NotAGGUF(f"{name} is not a GGUF model llama.cpp can load ({exc.message}): the file was deleted",
                       hint="pick another file of the repository") from exc


def _rename_durably(partial: Path, final: Path) -> None:
    """Give the verified file its final name once its bytes are on the disk: without the fsync, a power cut
    soon after could leave a short or empty file under the model's name (the rename reaching the disk first)."""
    with partial.open("rb") as fh:
        os.fsync(fh.fileno())
    os.replace(partial, final)
    folder = os.open(final.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def _record(models_dir: Path, name: str, target: PullTarget, meta: HfFileMetadata, sha256: str) -> None:
    """The pulled file in ``manifest.json`` (fetch.py's), so a later pull or check verifies it without the network.

    Under a lock of its own: two pulls of different files (the server's, the CLI's) ending together would
    otherwise each write the manifest it read, one losing the other's entry, or clash on its temporary file."""
    entry: dict[str, object] = {
        "sha256": sha256, "source": f"huggingface:{target.repo}:{target.file}@{meta.commit_hash}",
        "source_sha256": sha256, "converter_version": None, "repo": target.repo, "file": target.file,
        "revision": target.revision, "commit": meta.commit_hash, "size": size_now(models_dir / name)}
    with filelock.FileLock(str(models_dir / STAGING / "manifest.lock"), timeout=60):
        manifest = read_manifest(models_dir)
        if manifest.get(name) != entry:
            manifest[name] = entry
            write_manifest(models_dir, manifest)


def _recorded_sha256(models_dir: Path, target: PullTarget) -> str | None:
    """The sha256 an earlier pull of the same repository, file and revision recorded."""
    entry = read_manifest(models_dir).get(_final_name(target))
    if not isinstance(entry, dict):
        return None
    same = (entry.get("repo"), entry.get("file"), entry.get("revision")) == (target.repo, target.file, target.revision)
    sha = entry.get("sha256")
    return sha if same and isinstance(sha, str) else None


class _Hashes:
    """A file's sha256 computed once per pull (5 GB take seconds)."""

    def __init__(self) -> None:
        self._known: dict[Path, str] = {}

    def of(self, path: Path) -> str:
        if path not in self._known:
            self._known[path] = sha256_file(path)
        return self._known[path]


