"""Tests on conversations written outside this project (LoCoMo), which the repository never holds.

Their licences are not the project's, so the data stays in a folder beside the repository (LoCoMo's dev half is
``locomo-dev.json``, from snap-research/LoCoMo ``data/locomo10.json``).
``make test`` does not collect this folder (``tests/conftest.py``), so a bare clone passes it; run them with
``make test-real-data REAL_DATA=DIR``, which sets ``LYRA_REAL_DATA``. Collected without the data, they fail:
never a skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

VARIABLE = "LYRA_REAL_DATA"


def real_data(name: str) -> Path:
    """The path of ``name`` in the folder ``LYRA_REAL_DATA`` names; fails the test when it is not there."""
    folder = os.environ.get(VARIABLE)
    if not folder:
        pytest.fail(f"{VARIABLE} is not set: run `make test-real-data REAL_DATA=DIR` with the folder holding {name}")
    path = Path(folder) / name
    if not path.is_file():
        pytest.fail(f"{path} is not there: {VARIABLE} must name the folder holding {name}")
    return path
