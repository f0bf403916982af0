"""Search a person can trust, without a browser or a model: a summary or a digest dated by the days its sources
speak of (not the day the dream ran), a text found in several kinds shown once, the words that matched marked
and a long text cut around them, and the person's own question of a minute ago never ranked first."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, timedelta, timezone

import numpy as np
import pytest

from lyra_local.memory import Memory
from lyra_local.memory.search import (
    MEANING,
    MEANING_FLOORS,
    Candidate,
    Found,
    SearchQuery,
    dedupe,
    demote_fresh,
    matched_by,
    matches,
    meaning_floor,
    ordered,
    search,
)
from lyra_local.memory.snippet import matched_spans, snippet
from lyra_local.store import Store
from lyra_local.store.db import to_iso
from lyra_local.store.recall_index import RecallIndex, filters

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=timezone.utc)
LONG = ("We spent the morning at the market. " * 8 + "Then Caroline showed me her new pottery kiln in the garden. "
        + "Afterwards we had tea and talked about nothing much. " * 8)


def found(tier: str, content: str, *, session_id: int | None = 1, created_at: str = "2023-05-08T13:56:00+00:00",
          item_id: int = 1) -> Found:
    return Found(tier, item_id, content, created_at, session_id, "s", None, 1.0,
                 began_at=created_at, ended_at=created_at)


# -- snippets ----------------------------------------------------------------------------------------------

def test_a_short_text_is_whole_with_its_matched_words_marked() -> None:
    pieces = snippet("I bought a secondhand Kiln for my pottery.", "kiln potteries")
    assert "".join(p.text for p in pieces) == "I bought a secondhand Kiln for my pottery."
    assert [p.text for p in pieces if p.match] == ["Kiln", "pottery"]


def test_a_long_text_is_cut_around_its_first_match_with_ellipses() -> None:
    pieces = snippet(LONG, "kiln")
    text = "".join(p.text for p in pieces)
    assert text.startswith("…") and text.endswith("…")
    assert "kiln" in text and len(text) < 300
    assert text.strip("…") in LONG and not text.strip("…").startswith(" ")
    assert [p.text for p in pieces if p.match] == ["kiln"]


def test_a_text_matched_by_meaning_alone_shows_its_start() -> None:
    pieces = snippet(LONG, "ceramics")
    assert not any(p.match for p in pieces)
    assert "".join(p.text for p in pieces).startswith("We spent the morning") and pieces[-1].text == "…"


def test_matching_takes_prefixes_and_endings_but_not_stopwords_or_parts_of_words() -> None:
    text = "The painter paints; Painting is what she does. A skiln is no kiln."
    assert [text[a:b] for a, b in matched_spans(text, "what did she paint")] == ["painter", "paints", "Painting"]
    assert [text[a:b] for a, b in matched_spans(text, "kiln")] == ["kiln"]


# -- only what matches: by words, by date, by meaning above the floor, or the reply to one that matched ----------

def test_words_come_first_then_the_named_day_then_meaning_from_the_floor() -> None:
    assert matched_by(True, 0.01, 0.4) == "words"
    assert matched_by(False, 0.01, 0.4, dated=True) == "date"
    assert matched_by(False, 0.4, 0.4) == "meaning"
    assert matched_by(False, 0.399, 0.4) is None
    assert matched_by(False, None, 0.4) is None  # no vector (being re-embedded): only words can match


def test_a_turn_that_matches_nothing_is_shown_only_as_the_reply_to_one_that_does() -> None:
    asked = Candidate(1, words=True, cosine=0.1)
    reply = Candidate(2, words=False, cosine=0.05, previous=1)
    after_reply = Candidate(3, words=False, cosine=0.05, previous=2)  # a reply's reply is no match
    stray = Candidate(9, words=False, cosine=0.2, previous=8)  # its previous turn was not found
    near = Candidate(11, words=False, cosine=0.9)
    after_near = Candidate(12, words=False, cosine=0.0, previous=11)
    assert matches([reply, after_reply, stray, asked, near, after_near], 0.4) == {
        1: "words", 2: "reply", 11: "meaning", 12: "reply"}


def test_a_word_nobody_said_matches_nothing_so_brings_no_reply() -> None:
    near = [Candidate(i, words=False, cosine=0.3, previous=i - 1) for i in range(1, 6)]
    assert matches(near, 0.4) == {}


def test_the_floor_is_the_embedding_models_own_and_higher_for_a_word_or_two() -> None:
    mini = MEANING_FLOORS["all-MiniLM-L6-v2"]
    assert meaning_floor("all-MiniLM-L6-v2.F16", "our new dog is afraid of the hoover") == mini.sentence
    assert meaning_floor("/models/all-MiniLM-L6-v2.Q8_0", "my dog") == mini.words  # "my" is a stopword
    assert meaning_floor("all-MiniLM-L6-v2.F16", "rescue greyhound") == mini.words
    assert mini.words > mini.sentence
    assert meaning_floor("nomic-embed-text-v1.5.f16", "a whole sentence of words here") == MEANING.sentence


# -- one text once, the fresh question last, ordered by the days spoken of ----------------------------------------

def test_a_text_found_in_several_kinds_is_shown_once_at_its_best_rank() -> None:
    gist = found("gist", "Caroline went to an LGBTQ support group.", item_id=7)
    day = found("digest", "caroline went to an LGBTQ support-group!", session_id=None, item_id=3)
    other = found("exchange", "Melanie painted a sunrise.", item_id=9)
    assert dedupe([gist, other, day]) == [gist, other]


def test_the_current_conversations_last_minutes_come_after_older_memories() -> None:
    just_asked = found("exchange", "where did I put the key?", session_id=5,
                       created_at=to_iso(NOW - timedelta(minutes=1)))
    earlier_here = found("exchange", "the key is under the pot", session_id=5,
                         created_at=to_iso(NOW - timedelta(hours=2)), item_id=2)
    elsewhere = found("exchange", "a key elsewhere", session_id=6, created_at=to_iso(NOW - timedelta(minutes=1)),
                      item_id=3)
    assert demote_fresh([just_asked, earlier_here, elsewhere], 5, NOW) == [earlier_here, elsewhere, just_asked]
    assert demote_fresh([just_asked, earlier_here], None, NOW) == [just_asked, earlier_here]


def test_newest_and_oldest_go_by_the_days_a_memory_speaks_of() -> None:
    may = replace(found("gist", "may"), began_at="2023-05-01T00:00:00+00:00", ended_at="2023-05-03T00:00:00+00:00",
                  created_at="2026-11-24T00:00:00+00:00")
    june = replace(found("exchange", "june", item_id=2), began_at="2023-06-01T00:00:00+00:00",
                   ended_at="2023-06-01T00:00:00+00:00", created_at="2023-06-01T00:00:00+00:00")
    assert ordered([may, june], "newest") == [june, may]
    assert ordered([june, may], "oldest") == [may, june]
    assert ordered([may, june], "best") == [may, june]


def test_an_unknown_order_is_refused() -> None:
    with pytest.raises(Exception, match="order must be"):
        SearchQuery("x", order="random")  # type: ignore[arg-type]


# -- dated by the days the sources speak of --------------------------------------------------------------------

@pytest.fixture
def history(store: Store, memory: Memory) -> tuple[Memory, int, int]:
    """A conversation of 11 and 14 September 2023 (a Monday and a Thursday), summarized and digested today."""
    session = store.sessions.create("conv-26 session 3", created_at="2023-09-11T10:00:00+00:00").id
    for day, text in ((11, "Caroline: I went to a pottery class and made a bowl."),
                      (14, "Melanie: The kids loved the pottery bowl you made.")):
        memory.remember(session, "user", text, created_at=f"2023-09-{day}T10:00:00.000000+00:00")
    text = "Caroline went to a pottery class and made a bowl."
    vector = np.asarray(memory.embedder.embed([text])[0], dtype=np.float32)
    turns = [t.id for t in store.exchanges.history(session)]
    gist = store.derived.put_gist(session, text, max(turns), vector, memory.active_model, read=turns)
    for granularity, period in (("day", "2023-09-11"), ("week", "2023-W37"), ("month", "2023-09")):
        store.derived.put_digest(granularity, period, text if granularity == "day" else f"The {granularity}: {text}",
                                 1, vector, memory.active_model)
    return memory, session, gist.id


def test_summaries_and_digests_cover_the_days_their_sources_speak_of(history: tuple[Memory, int, int]) -> None:
    memory, _, gist = history
    index = RecallIndex(memory.store)
    assert index.covers("gist", [gist]) == {gist: ("2023-09-11T10:00:00.000000+00:00",
                                                   "2023-09-14T10:00:00.000000+00:00")}
    periods = {d.period: d.id for d in memory.store.derived.digests()}
    covers = index.covers("digest", list(periods.values()))
    assert {p: (covers[i][0][:10], covers[i][1][:10]) for p, i in periods.items()} == {
        "2023-09-11": ("2023-09-11", "2023-09-11"), "2023-W37": ("2023-09-11", "2023-09-17"),
        "2023-09": ("2023-09-01", "2023-09-30")}


def test_a_week_key_is_the_iso_week_in_every_year(store: Store) -> None:
    """The store's SQL for an ISO week's first day agrees with Python's calendar, years with 52 and 53 weeks."""
    for year in range(2019, 2028):
        for week in (1, 2, 26, 52, 53):
            try:
                monday = date.fromisocalendar(year, week, 1)
            except ValueError:
                continue
            store.derived.put_digest("week", f"{year}-W{week:02d}", f"w {year} {week}", 1)
    digests = store.derived.digests("week")
    covers = RecallIndex(store).covers("digest", [d.id for d in digests])
    for d in digests:
        year, week = int(d.period[:4]), int(d.period[6:])
        monday = date.fromisocalendar(year, week, 1)
        assert covers[d.id][0][:10] == monday.isoformat()
        assert covers[d.id][1][:10] == (monday + timedelta(days=6)).isoformat()


@pytest.mark.parametrize(("since", "until", "kept"), [
    ("2023-09-12", "2023-09-13", {"gist", "week", "month"}),  # between its turns: the summary covers it
    ("2023-09-14", "2023-09-15", {"gist", "week", "month"}),
    ("2023-09-11", "2023-09-12", {"gist", "day", "week", "month"}),
    ("2023-09-18", None, {"month"}),  # the rest of September
    ("2023-10-01", None, set()),
    (None, "2023-09-11", {"month"}),  # 1-10 September: only the month speaks of it
    ("2026-01-01", None, set()),  # the dream ran today: that dates nothing
])
def test_since_and_until_keep_what_speaks_of_those_days(history: tuple[Memory, int, int], since: str | None,
                                                         until: str | None, kept: set[str]) -> None:
    memory, _, gist = history
    index = RecallIndex(memory.store)
    bounds = [to_iso(datetime.fromisoformat(b).replace(tzinfo=timezone.utc)) if b else None for b in (since, until)]
    gists = index.passing(filters("gist", since=bounds[0], until=bounds[1]), [gist])
    digests = {d.id: d.granularity for d in memory.store.derived.digests()}
    passed = index.passing(filters("digest", since=bounds[0], until=bounds[1]), list(digests))
    assert {"gist" for _ in gists} | {digests[i] for i in passed} == kept


def test_search_dates_a_digest_by_its_period_and_shows_a_text_once(history: tuple[Memory, int, int]) -> None:
    memory, session, gist = history
    results = search(memory, SearchQuery("pottery bowl"), now=NOW)
    texts = [r.content for r in results]
    assert len(texts) == len(set(texts))  # the day's digest is the summary's text: once
    summary = next(r for r in results if r.content == "Caroline went to a pottery class and made a bowl.")
    assert summary.began_at.startswith("2023-09-11") and summary.ended_at.startswith("2023-09-14")
    week = next(r for r in results if r.tier == "digest" and r.granularity == "week")
    assert week.period == "2023-W37" and week.began_at.startswith("2023-09-11")
    assert week.created_at.startswith(str(date.today().year))  # written today, dated by what it speaks of
    assert any(p.match and p.text.lower() == "pottery" for p in summary.snippet)
    only_2023 = search(memory, SearchQuery("pottery bowl", since="2023-09-12", until="2023-09-13"), now=NOW)
    assert {r.tier for r in only_2023} >= {"gist", "digest"} and "exchange" not in {r.tier for r in only_2023}


def test_search_puts_the_question_just_asked_here_last(store: Store, memory: Memory) -> None:
    old = store.sessions.create("last year").id
    memory.remember(old, "user", "My sister Ana lives in Ghent.", created_at="2025-03-01T10:00:00+00:00")
    here = store.sessions.create("now").id
    memory.remember(here, "user", "Where does my sister Ana live?", created_at=to_iso(NOW - timedelta(minutes=1)))
    plain = search(memory, SearchQuery("sister Ana live", tier="exchange"), now=NOW)
    assert plain[0].session_id == here  # the question itself matches best
    asked = search(memory, SearchQuery("sister Ana live", tier="exchange", current_session_id=here), now=NOW)
    assert [r.session_id for r in asked] == [old, here]
