"""Reading a member of an uploaded or imported zip only after checking what it would expand to.

The upload is bounded compressed, not decompressed: a zip of a few hundred
kilobytes can hold gigabytes of zeros. Each member's declared size and
compression ratio are checked before a byte is inflated; Python's zipfile
never inflates past the declared size (a member that lies fails its CRC), so
the declared size bounds the memory a read can take.

A damaged member shows only as it is inflated, and each decompressor says so
in its own way (``zlib.error``, ``lzma.LZMAError``, ``EOFError``, an
``OSError`` from bz2, a CRC ``BadZipFile``): ``MEMBER_ERRORS`` are those, and a
reader turns them into an ``ImportFormatError``. An encrypted member, or one
compressed by a method Python does not read, is refused before it is opened.
"""

from __future__ import annotations

import lzma
import zipfile
import zlib
from typing import IO

from .records import ImportFormatError

MAX_MEMBER_BYTES = 1024**3  # the largest file we inflate: a very large ChatGPT export is a few hundred MB
MAX_RATIO = 100  # JSON text deflates 5 to 20 times; a bomb of zeros about 1,000 times
HINT = "this is not an export Lyra or ChatGPT wrote; unzip it yourself and pass the file inside if you trust it"
METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)  # what zipfile inflates
MEMBER_ERRORS = (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, OSError)


def check_member(archive: zipfile.ZipFile, name: str) -> zipfile.ZipInfo:
    """The member's entry, once its size and ratio are within bounds; else an ``ImportFormatError``."""
    info = archive.getinfo(name)
    where = f"{name} in {archive.filename or 'the zip'}"
    if info.flag_bits & 0x1:
        raise ImportFormatError(f"{where} is encrypted; nothing was imported",
                                hint="export again, or unzip it with its password and pass the file inside")
    if info.compress_type not in METHODS:
        raise ImportFormatError(f"{where} is compressed with method {info.compress_type}, which Lyra does not "
                                "read; nothing was imported", hint=HINT)
    if info.file_size > MAX_MEMBER_BYTES:
        raise ImportFormatError(f"{where} would expand to {info.file_size:,} bytes, more than the "
                                f"{MAX_MEMBER_BYTES:,} Lyra reads from a zip; nothing was imported", hint=HINT)
    if info.file_size > MAX_RATIO * max(info.compress_size, 1) and info.file_size > 1024**2:
        raise ImportFormatError(f"{where} is compressed {info.file_size // max(info.compress_size, 1):,} to 1 "
                                f"(more than {MAX_RATIO} to 1: a zip bomb?); nothing was imported", hint=HINT)
    return info


def check_members(archive: zipfile.ZipFile, names: list[str]) -> None:
    """Check every member an import will read, before it reads any."""
    present = set(archive.namelist())
    for name in names:
        if name in present:
            check_member(archive, name)


def read_member(archive: zipfile.ZipFile, name: str) -> bytes:
    """The member's bytes, once checked; a damaged member is an ``ImportFormatError``."""
    info = check_member(archive, name)
    try:
        return archive.read(info)
    except MEMBER_ERRORS as exc:
        raise ImportFormatError(f"{name} in {archive.filename or 'the zip'} is damaged: {exc}",
                                hint="download or export it again; nothing was imported") from exc


def open_member(archive: zipfile.ZipFile, name: str) -> IO[bytes]:
    """The member to stream, once checked: its reader catches ``MEMBER_ERRORS``."""
    return archive.open(check_member(archive, name))
