"""What ``pull`` hands to huggingface_hub's ``http_get`` so that the transfer stays under Lyra's control: the
file it writes to, which refuses at the first bytes what is not a GGUF (a captive portal's HTML page), and the
progress "bar", which reports ``Progress`` and stops the transfer when the person cancels.

``http_get`` writes through an object with ``write/seek/tell/truncate`` and reports through a tqdm-like class;
these are the smallest such objects. They raise ``Stopped`` and ``NotGGUFStream`` inside the transfer, and
``pull`` turns them into its errors (``PullCancelled``, ``NotAGGUF``). This module never opens a connection.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

from .gguf_header import MAGIC


@dataclass(frozen=True)
class Progress:
    """How far a download is: bytes done (resumed ones included), of ``total``; ``rate`` in bytes per second."""

    done: int
    total: int | None
    rate: float
    eta_s: float | None


Report = Callable[[Progress], None]


class Stopped(Exception):
    """Raised inside the transfer when the person cancels; ``pull`` turns it into ``PullCancelled``."""


class NotGGUFStream(Exception):
    """Raised inside the transfer when its first bytes are not GGUF's magic; ``what`` names what came instead."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def starts_as_gguf(path: Path) -> bool:
    """Whether a partial file begins as a GGUF does (an empty one does): only then can it be resumed."""
    with path.open("rb") as fh:
        head = fh.read(len(MAGIC))
    return MAGIC.startswith(head)


class GGUFOnly:
    """The partial file as ``http_get`` writes it, refusing at the first bytes what is not GGUF (an HTML page).

    Checked only at offset 0: a resumed file's beginning was checked before the transfer (``starts_as_gguf``),
    and when a server ignores the Range and sends the whole file again, ``http_get`` truncates to 0 first."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw

    def write(self, data: bytes) -> int:
        if self._raw.tell() == 0 and not MAGIC.startswith(bytes(data[:len(MAGIC)])):
            raise NotGGUFStream(describe_head(bytes(data[:512])))
        return self._raw.write(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def truncate(self, size: int | None = None) -> int:
        return self._raw.truncate(size)

    def flush(self) -> None:
        self._raw.flush()


def describe_head(head: bytes) -> str:
    """What a refused answer is, for the message: "an HTML page", else its first bytes."""
    text = head.lstrip().lower()
    if text.startswith((b"<!doctype html", b"<html", b"<head", b"<body")) or b"<html" in text:
        return "an HTML page"
    return f"a file starting with {head[:8]!r}"


class Meter:
    """What ``http_get`` takes for a tqdm bar: it counts the bytes, reports ``Progress``, and stops the transfer
    when ``cancel`` is set (raising between two chunks, so the partial file holds only whole written chunks)."""

    def __init__(self, report: Report | None, cancel: threading.Event | None, *, total: int | None = None,
                 initial: int = 0, **_tqdm_options: object) -> None:
        self._report = report
        self._cancel = cancel
        self.total = total
        self.done = initial
        self._fetched = 0  # in this run, for the rate (resumed bytes came earlier)
        self._started = time.monotonic()
        self._emit()

    def update(self, n: int | float | None = 1) -> None:
        step = int(n or 0)
        self.done += step
        self._fetched += max(step, 0)
        if self._cancel is not None and self._cancel.is_set():
            raise Stopped()
        self._emit()

    def _emit(self) -> None:
        if self._report is None:
            return
        elapsed = time.monotonic() - self._started
        rate = self._fetched / elapsed if elapsed > 0 and self._fetched else 0.0
        left = self.total - self.done if self.total is not None else None
        eta = left / rate if left is not None and rate > 0 else None
        self._report(Progress(self.done, self.total, rate, eta))

    def close(self) -> None:
        pass

    def __enter__(self) -> Meter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def meter_class(report: Report | None, cancel: threading.Event | None) -> Callable[..., Meter]:
    """A ``tqdm_class`` for ``http_get``: it builds the bar with tqdm's options, this one with ours too."""
    def make(**options: Any) -> Meter:
        return Meter(report, cancel, **options)
    return make
