"""Calendar period keys for temporal digests: day ``2024-03-05``, week ``2024-W10``, month ``2024-03``."""

from __future__ import annotations

from datetime import datetime

GRANULARITIES = ("day", "week", "month")


def period_keys(moment: datetime) -> dict[str, str]:
    year, week, _ = moment.isocalendar()
    return {"day": moment.strftime("%Y-%m-%d"), "week": f"{year}-W{week:02d}", "month": moment.strftime("%Y-%m")}
