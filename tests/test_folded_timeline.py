"""The Memory panel's timeline folded (``memory/folded_timeline.py``), without a store or a browser: a period
with one child is that child, no text twice, and a month labelled by the days and weeks that had talk."""

from __future__ import annotations

from lyra_local.memory.folded_timeline import count_label, folded, timeline
from lyra_local.store.derived import Digest

ids = iter(range(1, 1000))


def digest(granularity: str, period: str, content: str | None = None) -> Digest:
    return Digest(next(ids), granularity, period, content or f"What happened in {period}.", 1, "2026-11-26")


def shown(digests: list[Digest]) -> list[str]:
    return [d.period for month in timeline(digests) for d in month.entries]


def test_a_month_of_one_week_of_one_day_is_one_entry_labelled_by_the_day() -> None:
    text = "Maya is preparing for an interview."
    months = timeline([digest("day", "2024-01-10", text), digest("week", "2024-W02", text),
                       digest("month", "2024-01", text)])
    assert [m.month for m in months] == ["2024-01"]
    assert [(d.granularity, d.period) for d in months[0].entries] == [("day", "2024-01-10")]
    assert months[0].count == "1 day"


def test_a_roll_up_of_one_day_goes_even_when_its_words_differ() -> None:
    months = timeline([digest("day", "2024-01-10", "Maya talked about Biscuit."),
                       digest("week", "2024-W02", "This week Maya talked about Biscuit."),
                       digest("month", "2024-01", "In January Maya talked about Biscuit.")])
    assert shown([d for m in months for d in m.entries]) == ["2024-01-10"]


def test_a_month_of_one_week_of_three_days_shows_the_week_and_its_days_but_not_the_month() -> None:
    days = [digest("day", f"2024-03-0{n}") for n in (4, 5, 7)]  # Monday, Tuesday, Thursday of 2024-W10
    months = timeline([*days, digest("week", "2024-W10"), digest("month", "2024-03")])
    assert [d.period for d in months[0].entries] == ["2024-W10", "2024-03-07", "2024-03-05", "2024-03-04"]
    assert months[0].count == "3 days"


def test_a_month_with_two_weeks_of_talk_keeps_its_own_digest_first() -> None:
    digests = [digest("day", "2024-03-04"), digest("day", "2024-03-12"), digest("week", "2024-W10"),
               digest("week", "2024-W11"), digest("month", "2024-03")]
    (march,) = timeline(digests)
    assert [d.period for d in march.entries] == ["2024-03", "2024-03-12", "2024-03-04"]  # each week: one day
    assert march.count == "2 days in 2 weeks"


def test_the_same_text_is_shown_once_as_its_most_specific_entry() -> None:
    same = "Caroline went to a support group."
    digests = [digest("day", "2024-03-04", same), digest("day", "2024-03-05", "Melanie painted a lake."),
               digest("week", "2024-W10", same + "  "), digest("month", "2024-03", "CAROLINE went to a support group!")]
    kept = folded(digests)
    assert sorted(d.period for d in kept) == ["2024-03-04", "2024-03-05"]
    texts = [d.content for m in timeline(digests) for d in m.entries]
    assert len(texts) == len(set(texts)) == 2


def test_a_week_across_two_months_is_filed_under_its_first_day_of_talk() -> None:
    # 2024-W05 runs from Monday 29 January to Sunday 4 February; talk on Thursday 1 and Friday 2 February only
    digests = [digest("day", "2024-02-01"), digest("day", "2024-02-02"), digest("week", "2024-W05"),
               digest("month", "2024-02")]
    months = timeline(digests)
    assert [m.month for m in months] == ["2024-02"]  # no January fold with nothing of January in it
    assert [d.period for d in months[0].entries] == ["2024-W05", "2024-02-02", "2024-02-01"]


def test_months_are_newest_first_and_counted_apart() -> None:
    digests = [digest("day", "2023-12-30"), digest("month", "2023-12"), digest("day", "2024-01-10"),
               digest("day", "2024-01-11"), digest("week", "2024-W02"), digest("month", "2024-01")]
    months = timeline(digests)
    assert [(m.month, m.count) for m in months] == [("2024-01", "2 days"), ("2023-12", "1 day")]
    assert shown(digests) == ["2024-W02", "2024-01-11", "2024-01-10", "2023-12-30"]


def test_a_roll_up_whose_days_are_not_shown_stays() -> None:
    """A person deleted the days' digests (they are left out of no roll-up already built): the month says it."""
    (month,) = timeline([digest("month", "2024-05", "May was quiet.")])
    assert [d.period for d in month.entries] == ["2024-05"] and month.count == ""


def test_labels_count_what_is_there() -> None:
    assert count_label(1, 1) == "1 day"
    assert count_label(3, 1) == "3 days"
    assert count_label(5, 2) == "5 days in 2 weeks"
    assert count_label(0, 0) == ""
