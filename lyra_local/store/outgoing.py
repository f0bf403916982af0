"""Copies of a memory written outside its data directory, named inside it while they are half-written.

A backup, an export, a household backup and the world state opened in an
editor are written where the person asked (another disk, a folder), first
under a temporary name (``DEST.partial``, ``$TMPDIR/lyra-world-*.md``) that
becomes the real one when the copy is whole. The writer removes it whatever
happens, short of being killed: a SIGKILL, an OOM kill or a power cut left it
for good, a copy of the person's words that no later forget could reach, in a
place nothing in the data directory named.

So before the first byte is written, the writer leaves a note in the data
directory (``outgoing/<id>.json``, a ``locked_file``: its flock says whether
the writer lives) naming those temporary files. The note goes with its
writer; a note whose writer ended is the recovery step's (``files.py``): it
removes the temporary files the note names, then the note. The note holds
paths, never words.

Only files a writer of ours would have made are removed, whatever a note
says: a regular file (not a link) at an absolute path whose name is a
temporary one of ours (``files.OURS``). A note cannot steer the sweep to the
finished backup, to the database, or to anything else.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

from .files import OURS, OUTGOING_DIR, locked_file


@contextlib.contextmanager
def writing_outside(data_dir: Path, *temporaries: Path) -> Iterator[None]:
    """Name ``temporaries`` (absolute, each matching ``OURS``) in a note in ``data_dir`` for as long as the block
    runs, so that if this process is killed in it the next open of the memory removes them."""
    paths = [str(p.expanduser().resolve()) for p in temporaries]
    strays = [p for p in paths if not OURS.fullmatch(Path(p).name)]
    if strays:
        raise ValueError(f"not a temporary name of ours: {strays}")  # the sweep would never remove it
    folder = data_dir / OUTGOING_DIR
    folder.mkdir(exist_ok=True)
    with locked_file(folder / f"{uuid.uuid4().hex}.json") as note:
        note.write(json.dumps(paths).encode())
        note.flush()
        os.fsync(note.fileno())  # a power cut after the copy's first bytes still finds the note
        yield


def world_draft() -> Path:
    """A new name in the system's temporary folder for the world state opened in an editor (``OURS``)."""
    return Path(tempfile.gettempdir()).resolve() / f"lyra-world-{uuid.uuid4().hex}.md"
