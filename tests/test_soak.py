"""The soak's short run (scripts/soak.py): a real server, dream worker, importer, forgetter and chat
clients on one data directory for half a minute, the server SIGKILLed and started again under the load,
then nothing forgotten anywhere, nothing leaked, and every turn answered before a kill still recalled."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import CHAT_GGUF, EMBED_GGUF, REPO, base_env, require_file

SHORT = ["--seconds", "35", "--clients", "2", "--import-every", "10", "--dream-loop", "10", "--forget-every", "5",
         "--settle", "4", "--idle", "11", "--kill-every", "18"]


def parse_table(stdout: str) -> dict[str, list[str]]:
    """The last markdown table the soak printed: measure -> one cell per phase."""
    tables, rows = [], None
    for line in stdout.splitlines():
        if line.startswith("| measure"):
            rows = {}
            tables.append(rows)
        elif rows is not None and line.startswith("| ") and not line.startswith("|-"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[cells[0]] = cells[1:]
        elif not line.startswith("|"):
            rows = None
    assert tables, f"no report table in the output:\n{stdout[-3000:]}"
    return tables[-1]


@pytest.mark.slow
@pytest.mark.models
def test_short_soak_with_a_kill_forgets_everywhere_without_errors_or_leaks(tmp_path: Path) -> None:
    require_file(CHAT_GGUF)
    require_file(EMBED_GGUF)
    report = tmp_path / "soak.json"
    env = {**base_env(tmp_path), "TMPDIR": str(tmp_path)}  # a failed run's data and logs stay in tmp_path
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "soak.py"), *SHORT, "--json", str(report)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=420)
    table = parse_table(proc.stdout)
    assert "markers kept" in table, f"an incomplete report:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
    assert proc.stdout.startswith("$ ") and "nproc" in proc.stdout.splitlines()[1]  # command and machine first
    planted = table["markers planted (chat / openai / deleted session / import)"]
    assert 0 < int(planted[0].split()[0]) <= int(planted[-1].split()[0])
    forgotten = int(table["markers forgotten (CLI / API; while a dream pass ran)"][-1].split()[0])
    kept = int(table["markers kept"][-1])
    assert forgotten > 0 and kept > 0, "the short run forgot or kept nothing: it proved nothing"
    assert int(table["requests served (all routes)"][-1]) > 0
    failures = json.loads(report.read_text())["failures"]
    route = re.compile(r"^\|   (GET|POST|PUT|PATCH|DELETE|cli) ")  # the per-route counts: the rest says why
    summary = "\n".join(line for line in proc.stdout.splitlines()[-90:] if not route.match(line))
    assert proc.returncode == 0 and failures == [], f"the soak failed: {failures}\n{summary}\n{proc.stderr[-2000:]}"
    assert table["FORGOTTEN MARKERS FOUND (distinct)"] == ["0", "0"]
    assert table["errors (all kinds)"][-1] == table["lock errors (locked, StoreBusy, 503)"][-1] == "0"
    assert table["server 5xx"][-1] == "0"
    assert int(table["server kills (SIGKILL during the load)"][-1]) >= 1  # kept markers planted before it: recalled
    assert table["kept markers recalled (hybrid / bm25)"][-1].startswith(f"{kept}/{kept}")
    assert table["kept markers seen in the data files (the search works)"][-1] == f"{kept}/{kept}"
