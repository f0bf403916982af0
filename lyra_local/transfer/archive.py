"""Reading a member of an uploaded or imported zip only after checking what it would expand to.

The upload is bounded compressed, not decompressed: a zip of a few hundred
kilobytes can hold gigabytes of zeros. Each member's declared size and
compression ratio are checked before a byte is inflated; Python's zipfile
never inflates past the declared size (a member that lies fails its CRC), so
the declared size bounds the memory a read can take.
"""

from __future__ import annotations

import zipfile
from typing import IO

from .records import ImportFormatError

MAX_MEMBER_BYTES = 1024**3  # the largest file we inflate: a very large ChatGPT export is a few hundred MB
MAX_RATIO = 100  # JSON text deflates 5 to 20 times; a bomb of zeros about 1,000 times
HINT = "this is not an export Lyra or ChatGPT wrote; unzip it yourself and pass the file inside if you trust it"


def check_member(archive: zipfile.ZipFile, name: str) -> zipfile.ZipInfo:
    """The member's entry, once its size and ratio are within bounds; else an ``ImportFormatError``."""
    info = archive.getinfo(name)
    where = f"{name} in {archive.filename or 'the zip'}"
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
    return archive.read(check_member(archive, name))


def open_member(archive: zipfile.ZipFile, name: str) -> IO[bytes]:
    return archive.open(check_member(archive, name))
