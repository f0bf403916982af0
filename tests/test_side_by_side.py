"""scripts/side_by_side.py: gpu_check.sh's CPU | GPU tables."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from side_by_side import side_by_side  # noqa: E402

CPU = """machine: cpu
### Chat streaming, tokens/s
| backend | raw | ratio |
|---|---:|---:|
| local | 20.0 | 0.98 |
| server | 19.0 | 1.01 |
"""
GPU = CPU.replace("20.0", "310.5").replace("19.0", "290.2").replace("0.98", "0.97")


def test_rows_pair_up_with_labelled_columns() -> None:
    assert side_by_side(CPU, GPU, ("CPU", "GPU")) == [
        "machine: cpu",
        "### Chat streaming, tokens/s",
        "| backend | raw (CPU) | ratio (CPU) | raw (GPU) | ratio (GPU) |",
        "|---|---|---|---|---|",
        "| local | 20.0 | 0.98 | 310.5 | 0.97 |",
        "| server | 19.0 | 1.01 | 290.2 | 1.01 |",
    ]
