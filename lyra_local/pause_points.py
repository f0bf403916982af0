"""Named points where a crash test can hold a process still, to kill it exactly there.

``LYRATEST_PAUSE_AT=<point>`` makes the process that reaches ``<point>``
say so on stderr (``paused at <point>``) and sleep until it is killed; the
test waits for that line, then sends SIGKILL or SIGTERM. Unset (always, outside
the tests) a point costs one lookup in the environment. The points:

* ``restore-staged``: ``lyra restore`` has made the backup ready in
  ``.restoring/`` and replaced nothing yet (``transfer/backup.py``);
* ``import-batch``: a web import has committed its first batch
  (``web/import_jobs.py``);
* ``backup-written``: ``lyra backup`` (one memory's or ``--household``) has
  written its whole copy under its temporary name and not renamed it yet;
* ``export-written``: ``lyra export`` has written both files under their
  temporary names.

This is the only place the variable is read. Its name is outside ``LYRA_``:
every ``LYRA_*`` variable is a setting, and an unknown one is refused.
"""

from __future__ import annotations

import os
import sys
import time

PAUSE_ENV = "LYRATEST_PAUSE_AT"
POINTS = ("restore-staged", "import-batch", "backup-written", "export-written")


def pause_point(name: str) -> None:
    """Sleep here until killed when ``$LYRATEST_PAUSE_AT`` names this point."""
    if name not in POINTS:
        raise ValueError(f"unknown pause point {name!r}")
    if os.environ.get(PAUSE_ENV) != name:
        return
    print(f"paused at {name} (pid {os.getpid()})", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)
