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
import errno
import json
import logging
import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

from .registry import OURS, OUTGOING_DIR, locked_file

log = logging.getLogger(__name__)
NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)  # the data directory cannot take a note: the copy goes on


@contextlib.contextmanager
def writing_outside(data_dir: Path, *temporaries: Path) -> Iterator[None]:
    """Name ``temporaries`` (absolute, each matching ``OURS``) in a note in ``data_dir`` for as long as the block
    runs, so that if this process is killed in it the next open of the memory removes them.

    A data directory on a full (or read-only) disk cannot take the note; the copy is written all the same (a
    backup or an export to another disk is what a person makes of a full one) and the log says what a kill would
    leave."""
    paths = [str(p.expanduser().resolve()) for p in temporaries]
    strays = [p for p in paths if not OURS.fullmatch(Path(p).name)]
    if strays:
        raise ValueError(f"not a temporary name of ours: {strays}")  # the sweep would never remove it
    with contextlib.ExitStack() as noted:
        try:
            (data_dir / OUTGOING_DIR).mkdir(exist_ok=True)
            note = noted.enter_context(locked_file(data_dir / OUTGOING_DIR / f"{uuid.uuid4().hex}.json"))
            os.write(note.fileno(), json.dumps(paths).encode())  # unbuffered: nothing left to fail at its close
            os.fsync(note.fileno())  # a power cut after the copy's first bytes still finds the note
        except OSError as exc:
            if exc.errno not in NO_ROOM:
                raise
            noted.close()  # locked_file unlinks what it made
            log.warning("no room in %s for a note of the copy being written (%s): if this command is killed before "
                        "it is done, remove %s by hand", data_dir, exc.strerror or exc, " and ".join(paths))
        yield


def world_draft() -> Path:
    """A new name in the system's temporary folder for the world state opened in an editor (``OURS``)."""
    return Path(tempfile.gettempdir()).resolve() / f"lyra-world-{uuid.uuid4().hex}.md"
