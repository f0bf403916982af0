"""The web UI in a real headless Chromium (Debian's, driven by playwright) against a real `lyra serve`
with the real tiny model. Screenshots go to test-output/screenshots/ for a person to look at."""

from __future__ import annotations

import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

from .conftest import MODELS_DIR, REPO, Served, base_env, serve_lyra
from .web_fixtures import CONFIG, chromium, opened, start  # noqa: F401  (imported from here by other modules)

SHOTS = REPO / "test-output" / "screenshots"
XSS = "<img src=x onerror=alert(1)>"
EVIL_LINK = "[click me](javascript:alert(1))"

pytestmark = [pytest.mark.slow, pytest.mark.models]


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def send(page: Page, text: str) -> None:
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")


def test_a_reply_streams_in_token_by_token(page: Page, served: Served) -> None:
    send(page, "Hello! Tell me something nice about gardens.")
    bubble = page.locator(".message.assistant .bubble").last
    lengths = set()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        streaming = page.locator(".message.assistant.streaming").count() > 0
        lengths.add(len(bubble.inner_text()) if bubble.count() else 0)
        if not streaming and len(lengths) > 1:
            break
        time.sleep(0.03)
    assert len(lengths - {0}) >= 3, f"the reply did not arrive in pieces: {sorted(lengths)}"
    expect(page.locator(".message.assistant .why-wrap button")).to_have_text("Why?")
    final = bubble.inner_text()
    assert final.strip()
    expect(page.locator("#stop")).to_be_hidden()
    page.locator(".why-wrap button").last.click()
    expect(page.locator(".why").last).to_contain_text("tokens of context")
    shot(page, "chat")
    page.reload()  # stored: the conversation is there after a reload
    expect(page.locator(".message.user .bubble").first).to_have_text("Hello! Tell me something nice about gardens.")
    expect(page.locator(".message.assistant .bubble").first).to_have_text(final)


def test_enter_sends_and_shift_enter_makes_a_new_line(page: Page) -> None:
    page.click("#new-session")
    page.fill("#composer-input", "first line")
    page.press("#composer-input", "Shift+Enter")
    page.type("#composer-input", "second line")
    assert page.input_value("#composer-input") == "first line\nsecond line"
    page.press("#composer-input", "Enter")
    expect(page.locator(".message.user .bubble").last).to_contain_text("second line")
    assert page.locator(".message.user .bubble").last.inner_text() == "first line\nsecond line"
    assert page.input_value("#composer-input") == ""


@pytest.fixture
def chatty(tmp_path: Path) -> Iterator[Served]:
    """Long replies (up to 400 tokens, ~15 s here), so there is time to stop one."""
    yield from start(tmp_path, CONFIG.replace("max_tokens = 48", "max_tokens = 400"))


def test_stop_ends_the_reply_and_keeps_what_was_said(browser: Browser, chatty: Served) -> None:
    served = chatty
    page = browser.new_page()
    page.goto(served.url)
    send(page, "Please tell me a very long story about a lighthouse keeper and the sea.")
    expect(page.locator(".message.assistant.streaming .bubble")).not_to_have_text("", timeout=60_000)
    page.locator("#stop").click()
    expect(page.locator("#send")).to_be_visible(timeout=30_000)
    shown = page.locator(".message.assistant .bubble").last.inner_text()
    session = httpx.get(f"{served.url}/api/sessions").json()["sessions"][0]["id"]
    # the server notices the hang-up at its next token and then stores the partial reply: poll for it
    deadline = time.monotonic() + 20
    while True:
        stored = httpx.get(f"{served.url}/api/sessions/{session}/messages").json()["messages"]
        if stored[-1]["role"] == "assistant" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert stored[-1]["role"] == "assistant" and stored[-1]["content"].startswith(shown.strip()[:20])
    assert len(httpx.get(f"{served.url}/api/sessions/{session}/messages").json()["messages"]) == 2
    # once the server has stored it, the page shows the stopped reply as stored, with its tools
    expect(page.get_by_role("button", name="Regenerate this reply")).to_be_visible(timeout=20_000)
    expect(page.locator(".message.assistant .bubble").last).to_contain_text(stored[-1]["content"].strip()[:20])
    page.close()


def test_new_chat_is_named_by_its_first_message_and_delete_goes_to_a_trash_with_undo(page: Page,
                                                                                     served: Served) -> None:
    count = len(httpx.get(f"{served.url}/api/sessions").json()["sessions"])
    page.click("#new-session")
    page.click("#new-session")  # twice: still no empty conversation
    expect(page.locator("#messages > li")).to_have_count(0)
    assert len(httpx.get(f"{served.url}/api/sessions").json()["sessions"]) == count
    send(page, "Balcony tomatoes need more sun")
    expect(page.locator(".session-list li")).to_have_count(count + 1)  # the new one is listed, first, named by it
    expect(page.locator(".session-list .session-name").first).to_have_text("Balcony tomatoes need more sun")
    expect(page.locator(".session-group-title").first).to_have_text("Today")
    expect(page.locator("#conversation-title")).to_have_text("Balcony tomatoes need more sun")
    expect(page.locator(".message.assistant .why-wrap")).to_have_count(1, timeout=120_000)
    first = page.locator(".session-list li").first
    first.get_by_role("button", name="Rename").click()
    page.fill(".session-list input", "Balcony garden")
    page.press(".session-list input", "Enter")
    expect(page.locator(".session-list .session-name").first).to_have_text("Balcony garden")
    names = [s["name"] for s in httpx.get(f"{served.url}/api/sessions").json()["sessions"]]
    assert "Balcony garden" in names

    page.fill("#session-filter", "balcony")  # the title search
    expect(page.locator(".session-list .session-name")).to_have_count(1)
    page.fill("#session-filter", "no such title")
    expect(page.locator(".session-list li")).to_have_count(0)
    expect(page.locator("#session-list")).to_contain_text("No conversation has that in its title.")
    page.fill("#session-filter", "")

    page.locator(".session-list li").first.get_by_role("button", name="Delete Balcony garden").click()
    expect(page.locator(".session-list .session-name", has_text="Balcony garden")).to_have_count(0)
    expect(page.locator("#trash")).to_contain_text("“Balcony garden” deleted.")
    shot(page, "trash-undo")
    page.get_by_role("button", name="Undo deleting Balcony garden").click()
    expect(page.locator(".session-list .session-name").first).to_have_text("Balcony garden")
    expect(page.locator("#trash")).to_be_hidden()
    assert "Balcony garden" in [s["name"] for s in httpx.get(f"{served.url}/api/sessions").json()["sessions"]]

    page.locator(".session-list li").first.get_by_role("button", name="Delete Balcony garden").click()
    page.get_by_role("button", name="Forget Balcony garden now").click()  # the trash emptied at once
    expect(page.locator("#trash")).to_be_hidden()
    expect(page.locator(".session-list .session-name", has_text="Balcony garden")).to_have_count(0)
    names = [s["name"] for s in httpx.get(f"{served.url}/api/sessions").json()["sessions"]]
    assert "Balcony garden" not in names


def test_a_deleted_conversation_is_forgotten_when_its_undo_runs_out(page: Page, served: Served) -> None:
    session = httpx.post(f"{served.url}/api/sessions", json={"name": "Short-lived plans"}).json()
    page.reload()
    page.get_by_role("button", name="Delete Short-lived plans").click()
    expect(page.locator("#trash")).to_be_visible()
    expect(page.locator("#trash")).to_be_hidden(timeout=20_000)  # ten seconds, then forgotten
    assert httpx.get(f"{served.url}/api/sessions/{session['id']}/messages").status_code == 404

    # leaving the page forgets what waits in the trash at once
    second = httpx.post(f"{served.url}/api/sessions", json={"name": "Left behind"}).json()
    page.reload()
    page.get_by_role("button", name="Delete Left behind").click()
    expect(page.locator("#trash")).to_be_visible()
    page.reload()
    expect(page.locator(".session-list .session-name", has_text="Left behind")).to_have_count(0)
    assert gone_soon(served, second["id"], seconds=15)

    # what a tab killed before it could (no pagehide) left in its trash is forgotten by the next load: that tab
    # is gone (the lock it held while alive is free); tests/test_web_tabs.py kills a real one
    third = httpx.post(f"{served.url}/api/sessions", json={"name": "Killed tab"}).json()
    page.evaluate("id => localStorage.setItem('lyra-tab:killed', JSON.stringify({trash: {[id]: Date.now() + 10000},"
                  " open: null, at: Date.now()}))", third["id"])
    page.reload()
    expect(page.locator(".session-list .session-name", has_text="Killed tab")).to_have_count(0)
    assert gone_soon(served, third["id"], seconds=15)


def exists(served: Served, session_id: int) -> bool:
    status = httpx.get(f"{served.url}/api/sessions/{session_id}/messages").status_code
    assert status in (200, 404), status
    return status == 200


def gone_soon(served: Served, session_id: int, seconds: float = 10) -> bool:
    """Whether the conversation is gone from the server within ``seconds`` (a forget in flight lands: the page
    hides what its trash forgets at once, and sends the forget once it knows whose trash it is)."""
    deadline = time.monotonic() + seconds
    while exists(served, session_id):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_world_state_edits_persist_across_reload(page: Page) -> None:
    page.click(".tab[data-panel=memory]")
    page.fill("#world-input", "# Now\n- Sam is moving to Lisbon in May")
    page.click("#world-save")
    expect(page.locator("#world-status")).to_have_text("Saved.")
    page.reload()
    page.click(".tab[data-panel=memory]")
    expect(page.locator("#world-input")).to_have_value("# Now\n- Sam is moving to Lisbon in May")
    expect(page.locator("#sitrep")).to_contain_text("- Sam is moving to Lisbon in May")  # the sitrep shows it too


def test_a_refresh_keeps_unsaved_core_memory_text_and_shows_another_tabs_save_otherwise(
        page: Page, served: Served) -> None:
    """The editor was refilled from the server whenever the panel refreshed while it had no focus (a dream
    ending, a turn, the panel opened again): what the person had typed and not saved yet was wiped."""
    def saved_elsewhere(content: str) -> None:
        assert httpx.put(f"{served.url}/api/world", json={"content": content}).status_code == 200

    def reopen_until_the_sitrep_says(text: str) -> None:
        page.click(".tab[data-panel=search]")  # the focus leaves the editor
        page.click(".tab[data-panel=memory]")  # and the panel loads again
        expect(page.locator("#sitrep")).to_contain_text(text)  # that load has rendered

    saved_elsewhere("# Now\n- the kettle is in the shed")
    page.click(".tab[data-panel=memory]")
    expect(page.locator("#world-input")).to_have_value("# Now\n- the kettle is in the shed")
    page.fill("#world-input", "# Now\n- typed here, not saved yet")
    saved_elsewhere("# Now\n- another tab saved this")
    reopen_until_the_sitrep_says("another tab saved this")
    expect(page.locator("#world-input")).to_have_value("# Now\n- typed here, not saved yet")

    page.click("#world-save")
    expect(page.locator("#world-status")).to_have_text("Saved.")
    saved_elsewhere("# Now\n- a later save elsewhere")
    reopen_until_the_sitrep_says("a later save elsewhere")
    expect(page.locator("#world-input")).to_have_value("# Now\n- a later save elsewhere")  # nothing unsaved here


def test_a_proposed_world_change_is_accepted_in_the_page(page: Page, served: Served) -> None:
    proposal = httpx.post(f"{served.url}/api/world/proposals",
                          json={"agent": "coder", "content": "# Now\n- Sam moved to Lisbon", "reason": "Sam said so"})
    assert proposal.status_code == 201
    page.click(".tab[data-panel=memory]")
    item = page.locator("#world-proposals li")
    expect(item).to_contain_text("Proposed by agent:coder")
    expect(item).to_contain_text("Sam said so")
    expect(page.locator("#sitrep")).to_contain_text("Proposed changes waiting for review")
    shot(page, "memory-proposal")
    item.get_by_role("button", name="Accept").click()
    expect(page.locator("#world-proposals li")).to_have_count(0)
    expect(page.locator("#world-input")).to_have_value("# Now\n- Sam moved to Lisbon")


def test_html_and_javascript_links_render_inert(page: Page, served: Served) -> None:
    store = Store(Path(httpx.get(f"{served.url}/api/settings").json()["data_dir"]))
    session = store.sessions.create("markup")
    reply = (f"Here: {XSS} and {EVIL_LINK} and [a real one](https://example.org).\n\n"
             "```html\n<script>alert(2)</script>\n```")
    with store.write() as conn:
        store.exchanges.insert(conn, [NewExchange(session.id, "user", f"look {XSS} {EVIL_LINK}"),
                                      NewExchange(session.id, "assistant", reply)], None, None)
    store.close()
    page.reload()
    page.get_by_role("button", name="markup", exact=True).click()
    messages = page.locator("#messages")
    expect(messages.locator(".message.assistant .bubble")).to_contain_text("a real one")
    assert messages.locator("img").count() == 0 and messages.locator("script").count() == 0
    assert messages.locator("a[href^='javascript']").count() == 0
    expect(messages.locator(".message.user .bubble")).to_have_text(f"look {XSS} {EVIL_LINK}")
    expect(messages.locator(".message.assistant .bubble")).to_contain_text(XSS)
    expect(messages.locator(".message.assistant .bubble")).to_contain_text("click me (javascript:alert(1))")
    assert messages.locator("a[href='https://example.org']").count() == 1
    expect(messages.locator("pre code")).to_have_text("<script>alert(2)</script>")
    page.wait_for_timeout(300)
    assert page.dialogs == []  # type: ignore[attr-defined]


def test_phone_width_and_dark_mode(browser: Browser, served: Served) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 820}, color_scheme="dark")
    page = context.new_page()
    page.goto(served.url)
    expect(page.locator("#composer-input")).to_be_visible()
    assert page.locator("#sessions").bounding_box()["x"] < 0  # type: ignore[index]  # off-canvas until asked for
    shot(page, "phone-dark-chat")
    page.click("#toggle-sessions")
    expect(page.locator("#new-session")).to_be_in_viewport(ratio=1)
    page.wait_for_timeout(400)  # the drawer's slide
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert bg != "rgb(247, 245, 242)"  # the dark palette, from the system setting
    shot(page, "phone-dark-sessions")
    context.close()


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Served]:
    yield from start(tmp_path)


def test_after_a_dream_pass_the_memory_view_shows_gist_and_profile(browser: Browser, fresh: Served) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(fresh.url)
    send(page, "I live in Berlin with my cat Miso, and I work as a nurse at the Charité.")
    expect(page.locator(".message.assistant .why-wrap")).to_have_count(1, timeout=120_000)  # the reply is stored
    page.click(".tab[data-panel=dream]")
    expect(page.locator("#backlog")).to_contain_text("Conversations waiting to be summarised")
    page.click("#dream-now")
    expect(page.locator("#dream-log")).to_contain_text("Started dreaming because you asked", timeout=30_000)
    expect(page.locator("#dream-log")).to_contain_text("Summarised ‘", timeout=120_000)  # by its title
    shot(page, "dream")
    expect(page.locator("#dream-log")).to_contain_text("Finished:", timeout=300_000)
    expect(page.locator("#dream-now")).to_be_enabled()
    page.click(".tab[data-panel=memory]")
    gist = httpx.get(f"{fresh.url}/api/sessions/1/gist").json()["gist"]["content"]
    expect(page.locator("#session-gist p")).to_have_text(gist)
    facts = httpx.get(f"{fresh.url}/api/profile").json()["facts"]  # only facts said in the person's own words
    if facts:
        expect(page.locator("#profile li[data-key]")).to_have_count(len(facts))
        expect(page.locator("#profile .fact-key").first).to_have_text(facts[0]["key"])
    else:
        expect(page.locator("#profile")).to_contain_text("Nothing yet.")
    expect(page.locator("#timeline details.month li")).not_to_have_count(0)  # folded by month
    expect(page.locator("#drives [aria-label=Stability]")).to_have_attribute("aria-valuenow", "1.00")
    shot(page, "memory")
    page.click(".tab[data-panel=settings]")
    expect(page.locator("#model-chat-file")).to_have_value("SmolLM2-135M-Instruct.Q4_1.gguf")
    expect(page.locator("#model-summary-source")).to_have_value("same")
    expect(page.locator("#settings")).to_contain_text("GPU offload")
    shot(page, "settings")
    context.close()


def test_a_dead_model_shows_a_clear_error_and_keeps_the_message(browser: Browser, tmp_path: Path) -> None:
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_MODELS_DIR": str(MODELS_DIR)}
    dead = ('[dream]\nenabled = false\n[models.chat]\nbackend = "server"\nbase_url = "http://127.0.0.1:9"\n'
            'n_ctx = 2048\n[models.chat.retry]\nmax_attempts = 1\n[models.summary]\nsame_as = "chat"\n')
    with serve_lyra(tmp_path, env, dead) as served:
        page = browser.new_page()
        page.goto(served.url)
        send(page, "Are you there?")
        expect(page.locator("#error")).to_be_visible(timeout=30_000)
        expect(page.locator("#error")).to_contain_text("127.0.0.1:9")
        expect(page.locator("#send")).to_be_visible()
        shot(page, "model-down")
        page.reload()  # the message was kept
        expect(page.locator(".message.user .bubble")).to_have_text("Are you there?")
        page.close()


def test_every_control_has_a_name_and_tab_order_follows_the_page(page: Page) -> None:
    page.wait_for_load_state("networkidle")  # the page focuses the message box once it has loaded
    page.locator(".skip").focus()  # the first stop of the page
    order = []
    for _ in range(6):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id || document.activeElement.className"))
    # after the skip link: the header's tabs, then the conversations, as the page reads
    assert order == ["tab", "tab", "tab", "tab", "new-session", "new-off-record"], order
    page.click(".tab[data-panel=memory]")
    unnamed = page.evaluate("""() => [...document.querySelectorAll('button, input, textarea, [role=meter]')]
        .filter((e) => e.offsetParent !== null)
        .filter((e) => !(e.getAttribute('aria-label') || e.labels?.length || e.textContent.trim()))
        .map((e) => e.outerHTML.slice(0, 80))""")
    assert unnamed == []


def test_import_a_chatgpt_export_and_download_an_export_from_the_page(page: Page, tmp_path: Path) -> None:
    from .chatgpt_export import conversation, write_export

    convs = [conversation(f"trip-{i}", f"Trip to Porto, day {i}", [("user", f"Day {i}: we walked by the Douro"),
                                                                   ("assistant", "Sounds lovely")]) for i in range(12)]
    export = write_export(tmp_path / "chatgpt-export.zip", convs)
    page.click(".tab[data-panel=settings]")
    page.set_input_files("#import-file", str(export))
    page.click("#import-start")
    expect(page.locator("#import-status")).to_contain_text("Imported 24 messages: 12 new conversations",
                                                           timeout=60_000)
    expect(page.locator("#import-status")).to_contain_text("Skipped: instructions to ChatGPT (12).")  # as the CLI says
    expect(page.locator(".session-list")).to_contain_text("Trip to Porto, day 11")
    shot(page, "import")
    with page.expect_download() as download:
        page.click("#export")
    with zipfile.ZipFile(download.value.path()) as archive:
        assert "Trip to Porto, day 3" in archive.read("sessions.jsonl").decode()


def test_a_long_conversation_name_shows_two_whole_lines_and_no_sliver_of_a_third(browser: Browser,
                                                                                  served: Served) -> None:
    name = "A very long name for a conversation about the garden, the bees on the roof and the neighbours' hens"
    made = httpx.post(f"{served.url}/api/sessions", json={"name": name}).json()
    with opened(browser, served.url, settled=True) as page:
        button = page.locator(f"#session-list li[data-id='{made['id']}'] .session-name")
        expect(button).to_be_visible()
        box = button.evaluate("""(b) => {
            const style = getComputedStyle(b);
            return { inner: b.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom),
                     padding: parseFloat(style.paddingTop) + parseFloat(style.paddingBottom),
                     line: parseFloat(style.lineHeight), whole: b.scrollHeight };
        }""")
        assert box["whole"] > 2.5 * box["line"]  # the name is longer than two lines
        # Clipped at the padding box: any padding below the second line would show a sliver of the third.
        assert box["padding"] == 0 and abs(box["inner"] - 2 * box["line"]) < 1, box
        shot(page, "sidebar-long-name")


def test_the_guides_import_link_lands_on_the_import_form(browser: Browser, served: Served) -> None:
    with opened(browser, served.url, settled=True) as page:
        expect(page.locator("#first-run")).to_be_visible()
        page.click("#first-run-import")
        page.wait_for_load_state("networkidle")  # the catalog above it has loaded and laid out
        page.wait_for_timeout(500)
        field = page.locator("#import-file")
        expect(field).to_be_focused()
        expect(field).to_be_in_viewport()
        assert page.evaluate("document.scrollingElement.scrollTop") == 0  # the panel scrolled, not the page
        shot(page, "first-run-import-link")
        page.locator("#settings-sections").get_by_role("link", name="Models").click()  # Settings' own list
        expect(page.locator("#h-models")).to_be_in_viewport()
        expect(field).not_to_be_in_viewport()
        page.locator("#settings-sections").get_by_role("link", name="Your data").click()
        expect(page.locator("#h-data")).to_be_focused()
        expect(field).to_be_in_viewport()
        assert "#h-data" not in page.url  # the address still names the conversation, not a section
