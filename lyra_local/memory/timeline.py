"""The temporal digests rendered into a token budget: recent detail, older coarse. A pure function.

The ladder, newest first: day digests for the last days, then week digests for
the weeks before those days, then month digests before those weeks. When that
does not fit, recent days are folded into their weeks, then weeks into their
months; only when months alone do not fit are the oldest months dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date

Count = Callable[[str], int]


@dataclass(frozen=True)
class Entry:
    """One digest: ``period`` is ``2024-03-05``, ``2024-W10`` or ``2024-03``."""

    granularity: str
    period: str
    text: str
    id: int = 0

    @property
    def start(self) -> date:
        if self.granularity == "day":
            return date.fromisoformat(self.period)
        if self.granularity == "week":
            year, week = self.period.split("-W")
            return date.fromisocalendar(int(year), int(week), 1)
        return date.fromisoformat(self.period + "-01")

    def line(self) -> str:
        return f"- {self.period}: {self.text}"


def render_timeline(entries: Sequence[Entry], budget: int, count: Count) -> list[Entry]:
    """The digests to show, oldest first, within ``budget`` tokens (one line each)."""
    by = {g: sorted((e for e in entries if e.granularity == g), key=lambda e: e.start, reverse=True)
          for g in ("day", "week", "month")}
    cost: dict[tuple[str, str], int] = {}

    def size(entry: Entry) -> int:
        key = (entry.granularity, entry.period)
        if key not in cost:
            cost[key] = count(entry.line()) + 1
        return cost[key]

    def ladder(n_days: int, n_weeks: int) -> list[Entry]:
        days = by["day"][:n_days]
        cutoff = days[-1].start if days else date.max
        weeks = [w for w in by["week"] if w.start < cutoff][:n_weeks]
        cutoff = weeks[-1].start if weeks else cutoff
        months = [m for m in by["month"] if m.start < cutoff]
        return days + weeks + months

    n_days, n_weeks = len(by["day"]), len(by["week"])
    while True:
        chosen = ladder(n_days, n_weeks)
        if sum(size(e) for e in chosen) <= budget:
            break
        if n_days:
            n_days -= 1
        elif n_weeks:
            n_weeks -= 1
        else:  # months only: keep the newest that fit
            kept, used = [], 0
            for entry in chosen:
                if used + size(entry) > budget:
                    break
                kept.append(entry)
                used += size(entry)
            chosen = kept
            break
    return sorted(chosen, key=lambda e: e.start)
