#!/usr/bin/env python3
"""Print the Markdown tables of two runs of one benchmark side by side (CPU | GPU).

The runs print the same tables with the same rows, so the n-th table line of
one pairs with the n-th of the other: each row keeps its first column and gets
the other columns of both runs, labelled.

    python scripts/side_by_side.py cpu.txt gpu.txt --labels CPU GPU
"""

from __future__ import annotations

import argparse
from pathlib import Path


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def is_separator(row: list[str]) -> bool:
    return bool(row) and all(c and set(c) <= set("-:") for c in row)


def side_by_side(left: str, right: str, labels: tuple[str, str]) -> list[str]:
    """The lines of ``left`` with each table row widened by the matching row of ``right``."""
    right_rows = [cells(line) for line in right.splitlines() if line.startswith("|")]
    lines = left.splitlines()
    out, n = [], 0
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            out.append(line)
            continue
        a = cells(line)
        b = right_rows[n] if n < len(right_rows) else [""] * len(a)
        n += 1
        header = i + 1 < len(lines) and is_separator(cells(lines[i + 1])) and lines[i + 1].startswith("|")
        if is_separator(a):
            out.append("|" + "---|" * (len(a) + len(b) - 1))
        elif header:
            out.append("| " + " | ".join([a[0], *(f"{c} ({labels[0]})" for c in a[1:]),
                                          *(f"{c} ({labels[1]})" for c in b[1:])]) + " |")
        else:
            out.append("| " + " | ".join([a[0], *a[1:], *b[1:]]) + " |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("left", type=Path)
    parser.add_argument("right", type=Path)
    parser.add_argument("--labels", nargs=2, default=("CPU", "GPU"))
    args = parser.parse_args()
    print("\n".join(side_by_side(args.left.read_text(), args.right.read_text(), tuple(args.labels))))


if __name__ == "__main__":
    main()
