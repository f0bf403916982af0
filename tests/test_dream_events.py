"""The dream's event kinds are one declared set (``mind/dream/events.py``): each has its sentence, the dream
emits no other, the page names no other, and what goes out is the plain string the log always held."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from lyra_local.config import Settings
from lyra_local.llm.base import GenerationOptions, Message
from lyra_local.mind import Dreamer
from lyra_local.mind.dream.events import DreamEvent
from lyra_local.mind.dream.sentences import SENTENCES, sentence
from lyra_local.store import Store

from .fakes import FakeChatModel, FakeEmbedder
from .test_dream import add_session, respond

PANEL = Path(__file__).parent.parent / "lyra_local" / "web" / "static" / "dream-panel.js"
GENERIC = "Did some housekeeping"
DECLARED = {kind.value for kind in DreamEvent}
# A detail with every field some sentence reads, so each kind's own sentence is reached.
DETAIL = {"checks": ["budget"], "sentences_dropped": 2, "progress": "1/2", "fact_ids": [1], "periods": ["day:x"],
          "status": "done", "actions": 1, "delay_s": 1.5, "because": ["copied"], "backlog": {"ripe": 1}}


def test_every_declared_kind_has_its_sentence() -> None:
    assert set(SENTENCES) == set(DreamEvent)


@pytest.mark.parametrize("kind", list(DreamEvent))
def test_no_declared_kind_reads_as_housekeeping(kind: DreamEvent) -> None:
    for target in ("session:9", "gist:9", "day:2024-03-04", None):
        said = sentence({"kind": kind.value, "target": target, "detail": DETAIL}, {9: "Interview prep"})
        assert said and not said.startswith(GENERIC), (kind, target, said)


def test_a_kind_from_another_version_still_reads_as_something_done() -> None:
    assert sentence({"kind": "dusted", "target": None, "detail": {}}, {}) == f"{GENERIC} (dusted)."


def inventive(messages: Sequence[Message], options: GenerationOptions | None) -> str:
    """A summary model that makes things up in its prose: its drafts fail their grounding checks."""
    if options is not None and options.json_schema is not None:
        return respond(messages, options)
    return "Sam flew to the moon on a dragon and met the king of Norway, who gave Sam a golden violin."


@pytest.fixture()
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings('[companion]\nuser_name = "Sam"\n[dream]\nsession_idle_s = 0\n')


def test_every_kind_the_dream_emits_is_declared_and_goes_out_as_a_plain_string(store: Store,
        settings: Settings) -> None:
    heard: list[dict[str, Any]] = []
    add_session(store, "moving", "2024-03-04", ["I live in Berlin with my cat Miso", "How lovely!"])
    add_session(store, "plans", "2024-03-05", ["Thinking about the summer", "Tell me more"])
    first = Dreamer(store, FakeChatModel(respond=respond), FakeEmbedder(), settings,  # type: ignore[arg-type]
                    on_event=heard.append).run_pass(force=True)
    add_session(store, "later", "2024-04-20", ["Work was long today", "Rest well"])
    second = Dreamer(store, FakeChatModel(respond=inventive), FakeEmbedder(), settings,  # type: ignore[arg-type]
                     on_event=heard.append).run_pass(force=True)
    logged = [e["kind"] for e in store.coord.events()]
    assert set(logged) <= DECLARED
    assert {"pass.start", "pass.end", "gist", "profile", "digest", "narrative", "reflect"} <= set(logged)
    assert any(kind.endswith((".rejected", ".pruned", ".refused")) for kind in logged), logged
    sent = [e["kind"] for e in heard] + [a["kind"] for a in first.actions + second.actions]
    assert set(sent) <= DECLARED and all(type(kind) is str for kind in sent)  # never the enum: byte-identical


def test_every_kind_the_page_names_is_declared() -> None:
    js = PANEL.read_text(encoding="utf-8")
    phases = re.search(r"const PHASES = \{(.*?)\};", js, re.S)
    assert phases is not None
    named = set(re.findall(r'"?([\w.]+)"?\s*:', phases.group(1)))
    named |= set(re.findall(r'\.kind === "([^"]+)"', js))
    for alternatives in re.findall(r"/\^\(([\w|.]+)\)\$/\.test\(event\.kind\)", js):
        named |= set(alternatives.split("|"))
    assert len(named) > 10 and named <= DECLARED, named - DECLARED
