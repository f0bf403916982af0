"""Everyday use of the web UI, in a real headless Chromium against a real `lyra serve` with the
real tiny models: the model manager, dates, a chat that never loses what was typed, replies people can use,
and the whole page at phone width. Screenshots go to test-output/screenshots/."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

from .conftest import CHAT_GGUF, EMBED_GGUF, MODELS_DIR, Served, base_env, serve_lyra
from .test_web_ui import CONFIG, opened, send, shot, start

pytestmark = [pytest.mark.slow, pytest.mark.models]

TABLE_REPLY = """Here is the plan:

| Day | Walk | Distance |
|:----|:----:|---------:|
| Mon | `river` loop | 5 km |
| Tue | hills | 8 km |

```python
print("pack the boots")
```"""


def replied(page: Page, count: int) -> None:
    expect(page.locator(".message.assistant .why-wrap")).to_have_count(count, timeout=120_000)


def data_dir(served: Served) -> Path:
    return Path(httpx.get(f"{served.url}/api/settings").json()["data_dir"])


def test_a_2023_history_is_grouped_by_month_and_dated_by_day(page: Page, served: Served) -> None:
    store = Store(data_dir(served))
    try:
        for day, name in (("2023-09-11", "Hiking in the Alps"), ("2023-09-25", "Garden plans"),
                          ("2023-08-03", "Moving boxes")):
            session = store.sessions.create(name, created_at=f"{day}T09:00:00+00:00", source="chatgpt",
                                            source_id=f"conv-{day}")
            store.exchanges.add(NewExchange(session.id, "user", f"Notes on {name.lower()}",
                                            f"{day}T09:00:00+00:00", source_id=f"u-{day}"))
            store.exchanges.add(NewExchange(session.id, "assistant", "Noted.", f"{day}T09:01:00+00:00",
                                            source_id=f"a-{day}"))
            store.exchanges.add(NewExchange(session.id, "user", "And the next morning…",
                                            f"{day[:-2]}{int(day[-2:]) + 1:02d}T08:00:00+00:00",
                                            source_id=f"n-{day}"))
    finally:
        store.close()
    page.reload()
    groups = page.locator(".session-group-title")
    expect(groups.filter(has_text="September 2023")).to_have_count(1)
    expect(groups.filter(has_text="August 2023")).to_have_count(1)
    september = page.locator(".session-group", has=page.locator("h2", has_text="September 2023"))
    expect(september.locator(".session-name")).to_have_text(["Garden plans", "Hiking in the Alps"])
    page.get_by_role("button", name="Hiking in the Alps", exact=True).click()
    expect(page.locator("#conversation-title")).to_have_text("Hiking in the Alps")
    # a heading per day, a time on each message, and no Regenerate on a reply that was imported
    expect(page.locator(".day-separator")).to_have_text(["Mon 11 Sep 2023", "Tue 12 Sep 2023"])
    first = page.locator(".message.user").first
    expect(first.locator("time.when")).to_have_attribute("datetime", "2023-09-11T09:00:00.000000+00:00")
    assert "11 Sep 2023" in (first.locator("time.when").get_attribute("title") or "")
    expect(page.locator(".message.assistant .message-tools")).to_contain_text("Why?")
    expect(page.get_by_role("button", name="Regenerate this reply")).to_have_count(0)
    shot(page, "history-by-date")


def test_a_send_while_the_server_is_down_keeps_the_text_and_retry_sends_it(page: Page) -> None:
    page.wait_for_load_state("networkidle")
    page.click("#new-session")
    page.route("**/api/**", lambda route: route.abort("connectionrefused"))  # as the browser sees a server down
    send(page, "Remind me to water the basil")
    unsent = page.locator(".message.user.unsent")
    expect(unsent).to_have_count(1)
    expect(unsent).to_contain_text("Not sent: the server did not answer")
    expect(page.locator("#composer-input")).to_have_value("Remind me to water the basil")  # nothing typed is lost
    expect(page.locator("#empty")).to_be_hidden()
    shot(page, "not-sent-retry")
    page.unroute("**/api/**")
    page.get_by_role("button", name="Retry sending this message").click()
    replied(page, 1)
    expect(page.locator(".message.user.unsent")).to_have_count(0)
    expect(page.locator(".message.user .bubble")).to_have_text(["Remind me to water the basil"])
    expect(page.locator("#composer-input")).to_have_value("")
    expect(page.locator(".session-list .session-name").first).to_have_text("Remind me to water the basil")


@pytest.fixture
def chatty(tmp_path: Path) -> Iterator[Served]:
    """Long replies (up to 400 tokens), so there is time to stop one."""
    yield from start(tmp_path, CONFIG.replace("max_tokens = 48", "max_tokens = 400"))


def test_esc_stops_a_reply_and_marks_it_stopped(browser: Browser, chatty: Served) -> None:
    with opened(browser, chatty.url) as page:
        send(page, "Tell me a long story about a lighthouse keeper and her cat.")
        bubble = page.locator(".message.assistant.streaming .bubble")
        expect(bubble).not_to_have_text("", timeout=60_000)
        page.keyboard.press("Escape")
        expect(page.locator(".message.assistant.streaming")).to_have_count(0, timeout=10_000)
        note = page.locator(".message.assistant .cut-note")
        expect(note).to_have_text("Stopped before the end.")
        # once the server has stored the stopped reply, the page shows it as stored, still marked
        expect(page.get_by_role("button", name="Regenerate this reply")).to_be_visible(timeout=20_000)
        expect(note).to_have_text("Stopped before the end.")
        shot(page, "esc-stopped")
        # a regeneration stopped too: the page settles on the new, cut reply (2/2), not on the one it replaces
        page.get_by_role("button", name="Regenerate this reply").click()
        expect(page.locator(".message.assistant.streaming .bubble")).not_to_have_text("", timeout=60_000)
        page.keyboard.press("Escape")
        expect(page.locator(".message.assistant .pager-count")).to_have_text("2/2", timeout=20_000)
        expect(page.locator(".message.assistant .cut-note")).to_have_text("Stopped before the end.")


def test_a_message_the_server_refuses_stays_not_sent_and_leaves_no_empty_conversation(page: Page,
                                                                                    served: Served) -> None:
    page.wait_for_load_state("networkidle")
    count = len(httpx.get(f"{served.url}/api/sessions").json()["sessions"])
    page.click("#new-session")
    too_long = "word " * 40_001  # past the 200,000 characters a message may have
    page.fill("#composer-input", too_long)
    page.press("#composer-input", "Enter")
    unsent = page.locator(".message.user.unsent")
    expect(unsent).to_have_count(1)
    expect(unsent.locator(".unsent-note")).not_to_contain_text("did not answer")  # the server's own reason
    expect(page.locator("#composer-input")).to_have_value(too_long)
    expect(page.locator(".session-list li")).to_have_count(count)  # the conversation it made is not kept
    assert len(httpx.get(f"{served.url}/api/sessions").json()["sessions"]) == count


def test_a_connection_that_breaks_mid_reply_is_said_and_the_reply_marked(browser: Browser,
                                                                          chatty: Served) -> None:
    with opened(browser, chatty.url) as page:
        send(page, "Tell me a long story about a lighthouse keeper and her cat.")
        expect(page.locator(".message.assistant.streaming .bubble")).not_to_have_text("", timeout=60_000)
        chatty.proc.kill()  # the server dies mid-reply
        expect(page.locator(".message.assistant .cut-note")).to_have_text(
            "Cut short: the connection to the server broke.", timeout=10_000)
        expect(page.locator("#error")).to_contain_text("The connection to the server broke")
        expect(page.locator(".message.user .bubble")).to_have_text(
            ["Tell me a long story about a lighthouse keeper and her cat."])  # stored: not marked "Not sent"
        expect(page.locator(".message.user.unsent")).to_have_count(0)
        shot(page, "connection-broke")


def test_a_table_renders_and_a_code_block_copies(browser: Browser, served: Served) -> None:
    store = Store(data_dir(served))
    try:
        session = store.sessions.create("Walking week")
        store.exchanges.add(NewExchange(session.id, "user", "Plan my walks"))
        store.exchanges.add(NewExchange(session.id, "assistant", TABLE_REPLY))
    finally:
        store.close()
    context = browser.new_context(viewport={"width": 1280, "height": 820},
                                  permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.goto(served.url.replace("127.0.0.1", "localhost") + f"/#session={session.id}")  # a secure context
    reply = page.locator(".message.assistant .bubble").last
    expect(reply.locator("table th")).to_have_text(["Day", "Walk", "Distance"])
    expect(reply.locator("table tbody tr")).to_have_count(2)
    assert "align-right" in (reply.locator("tbody td").nth(2).get_attribute("class") or "")
    page.locator(".code-block").hover()
    reply.get_by_role("button", name="Copy code").click()
    expect(reply.locator(".copy-code")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == 'print("pack the boots")'
    page.get_by_role("button", name="Copy this message").last.click()
    assert page.evaluate("navigator.clipboard.readText()") == TABLE_REPLY  # as written, Markdown and all
    shot(page, "table-and-copy")
    context.close()


def test_the_whole_ui_fits_a_phone_without_sideways_scrolling(browser: Browser, served: Served) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 760}, is_mobile=True, has_touch=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(served.url)
    page.wait_for_load_state("networkidle")
    page.click("#toggle-sessions")
    page.click("#new-session")  # a conversation of its own (the drawer closes)

    def fits(where: str) -> None:
        width = page.evaluate("[document.documentElement.scrollWidth, document.body.scrollWidth, innerWidth]")
        assert max(width[:2]) <= width[2], f"{where}: the page is {width[:2]} px wide in a {width[2]} px window"

    send(page, "A short hello from my phone")
    replied(page, 1)
    expect(page.locator("#conversation-title")).to_have_text("A short hello from my phone")
    fits("a conversation")
    shot(page, "phone-chat")
    for tab in ("memory", "search", "dream", "settings"):
        button = page.locator(f".tab[data-panel={tab}]")
        expect(button).to_be_in_viewport(ratio=1)  # every tab reachable, none clipped
        button.click()
        expect(page.locator(f"#panel > section[data-panel={tab}]")).to_be_visible()
        if tab == "settings":
            expect(page.locator("#model-roles fieldset")).to_have_count(4)  # the model manager loaded
        fits(f"the {tab} panel")
        shot(page, f"phone-{tab}")
        page.click("#close-panel")
    page.click("#toggle-sessions")
    expect(page.locator("#new-session")).to_be_in_viewport(ratio=1)
    fits("the conversation list")
    page.click("#toggle-sessions")
    # Search -> Open shows the conversation: the panel that covered it closes
    page.locator(".tab[data-panel=search]").click()
    page.fill("#search-input", "hello phone")
    page.press("#search-input", "Enter")
    page.locator(".result a.open-link").first.click()
    expect(page.locator("#panel")).to_be_hidden()
    expect(page.locator(".message.user .bubble").first).to_have_text("A short hello from my phone")
    assert errors == []
    context.close()


@pytest.fixture
def own_models(tmp_path: Path) -> Iterator[Served]:
    """A server whose models folder holds the real models, a copy of the chat model under another name, and a
    download cut short: what a person has after fetching a model that broke halfway."""
    folder = tmp_path / "models"
    folder.mkdir()
    for model in MODELS_DIR.glob("*.gguf"):
        os.symlink(model, folder / model.name)
    shutil.copyfile(CHAT_GGUF, folder / "my-companion.Q4_1.gguf")
    shutil.copyfile(EMBED_GGUF, folder / "my-embedder.F16.gguf")
    with CHAT_GGUF.open("rb") as whole, (folder / "half-downloaded.Q4_K_M.gguf").open("wb") as cut:
        cut.write(whole.read(1_000_000))
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_MODELS_DIR": str(folder)}
    with serve_lyra(tmp_path, env, CONFIG) as running:
        yield running


def test_pick_a_model_in_settings_and_a_broken_one_is_refused(browser: Browser, own_models: Served) -> None:
    with opened(browser, own_models.url) as page:
        expect(page.locator("#first-run")).to_contain_text("small demonstration model")
        page.click("#first-run-models")  # the first-run line opens the model manager
        expect(page.locator("#panel > section[data-panel=settings]")).to_be_visible()
        files = page.locator("#model-files li")
        expect(files.filter(has_text="half-downloaded.Q4_K_M.gguf")).to_contain_text("cannot be used")
        expect(files.filter(has_text="my-companion.Q4_1.gguf")).to_contain_text("llama")
        demo = files.filter(has_text="SmolLM2-135M-Instruct.Q4_1.gguf")
        expect(demo).to_contain_text("SmolLM2 135M Instruct · llama")  # its file's name, not the header's
        expect(demo).not_to_contain_text("Lc100K")  # "Smollm2 135M 8k Lc100K Mix1 Ep2", as its trainer typed it
        on_cpu = not httpx.get(f"{own_models.url}/api/settings").json()["gpu_offload"]
        expect(page.locator("#model-roles").get_by_text("This build runs on the CPU")).to_have_count(int(on_cpu))
        before = own_models.config.read_bytes()

        page.select_option("#model-chat-file", "half-downloaded.Q4_K_M.gguf")
        expect(page.locator("[data-role=chat] .model-about")).to_contain_text("cannot be used")
        page.click("#models-apply")
        status = page.locator("#models-status")
        expect(status).to_contain_text("not applied", timeout=60_000)
        expect(status).to_contain_text("the running models keep serving")
        shot(page, "model-refused")
        assert own_models.config.read_bytes() == before  # lyra.toml untouched
        send(page, "Are you still there?")
        replied(page, 1)  # the old model still answers

        page.select_option("#model-chat-file", "my-companion.Q4_1.gguf")
        page.fill("#model-chat-ctx", "1024")
        page.click("#models-apply")
        expect(status).to_contain_text("Applied: chat", timeout=120_000)
        assert 'my-companion.Q4_1.gguf' in own_models.config.read_text()
        roles = httpx.get(f"{own_models.url}/api/settings").json()["roles"]
        assert roles["chat"]["model"] == "my-companion.Q4_1.gguf" and roles["chat"]["n_ctx"] == 1024
        expect(page.locator("#model-files li").filter(has_text="my-companion.Q4_1.gguf")).to_contain_text(
            "used for chat")
        shot(page, "model-picked")
        send(page, "Hello on the new model")
        replied(page, 2)

        # a new embedding model: every memory is embedded again in the background, and Settings follows it
        page.select_option("#model-embed-file", "my-embedder.F16.gguf")
        page.click("#models-apply")
        expect(status).to_contain_text("Applied: embeddings", timeout=120_000)
        expect(page.locator("#embed-progress")).to_have_text("Every memory has a vector of my-embedder.F16.",
                                                             timeout=60_000)
        found = httpx.get(f"{own_models.url}/api/recall", params={"q": "still there"}).json()["hits"]
        assert any("still there" in hit["content"] for hit in found)  # recall answers on the new vectors
        page.click("#first-run-dismiss")
        expect(page.locator("#first-run")).to_be_hidden()
