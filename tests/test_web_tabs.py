"""Two tabs of one browser (two pages of one Playwright context, sharing localStorage and Web Locks) against a real
`lyra serve` with the real tiny model, in Debian's Chromium: only the tab that deleted a conversation forgets it,
what a killed tab left in its trash is forgotten by a later load once that tab is gone, a message not sent is
kept when another tab deletes its conversation, and an off-the-record conversation open in one tab is not
deleted because another tab left it."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import Served
from .test_web_ui import exists, gone_soon, send

pytestmark = [pytest.mark.slow, pytest.mark.models]

NO_LOCKS = "delete Navigator.prototype.locks"  # as over plain http on a LAN: not a secure context, no Web Locks


@contextlib.contextmanager
def two_tabs(browser: Browser, url: str, *, locks: bool = True) -> Iterator[tuple[Page, Page]]:
    """Two tabs of one browser profile, both with the page loaded; no page error may happen in either."""
    context = browser.new_context(viewport={"width": 1280, "height": 820})
    if not locks:
        context.add_init_script(NO_LOCKS)
    pages = []
    for _ in range(2):
        page = context.new_page()
        page.errors = []  # type: ignore[attr-defined]
        page.on("pageerror", lambda e, p=page: p.errors.append(str(e)))  # type: ignore[attr-defined]
        page.goto(url)
        page.wait_for_load_state("networkidle")
        pages.append(page)
    yield pages[0], pages[1]
    assert [p.errors for p in pages] == [[], []]  # type: ignore[attr-defined]
    context.close()


def new_session(served: Served, name: str, remember: bool = True) -> int:
    response = httpx.post(f"{served.url}/api/sessions", json={"name": name, "remember": remember})
    assert response.status_code == 201
    return int(response.json()["id"])


def records(tab: Page) -> list[str]:
    """The tabs' records in the browser's storage (each tab's trash and open off-the-record conversation)."""
    return list(tab.evaluate("Object.keys(localStorage).filter(k => k.startsWith('lyra-tab:'))"))


def what_tab_shows(tab: Page) -> str:
    """What a failed assertion needs to say: the tab's error and notice lines and the tabs' records."""
    shown = {box: tab.locator(f"#{box}").inner_text() for box in ("error", "notice")
             if tab.locator(f"#{box}").is_visible()}
    stored = tab.evaluate("Object.fromEntries(Object.entries(localStorage).filter(([k]) => k.startsWith('lyra-')))")
    return f"the tab shows {shown}, its storage holds {stored}"


def listed(tab: Page, name: str):  # type: ignore[no-untyped-def]
    return tab.locator(".session-list .session-name", has_text=name)


def crash(tab: Page, browser: Browser) -> None:
    """The tab's renderer dies: no pagehide, no request at the end, as when a phone kills a tab. (Page.crash sent
    through the browser's session: sent on the tab's own, its answer never comes.)"""
    crashed: list[bool] = []
    tab.on("crash", lambda _: crashed.append(True))
    target = tab.context.new_cdp_session(tab).send("Target.getTargetInfo")["targetInfo"]["targetId"]
    session = browser.new_browser_cdp_session()
    inner = session.send("Target.attachToTarget", {"targetId": target, "flatten": False})["sessionId"]
    session.send("Target.sendMessageToTarget", {"sessionId": inner, "message": json.dumps({"id": 1,
                                                                                           "method": "Page.crash"})})
    deadline = time.monotonic() + 10
    while not crashed:
        assert time.monotonic() < deadline, "the tab did not crash"
        time.sleep(0.05)
        session.send("Target.getTargets")  # lets playwright deliver the crash event


def test_an_undo_in_one_tab_finds_its_conversation_after_another_tab_loaded_the_list(browser: Browser,
                                                                                    served: Served) -> None:
    kept = new_session(served, "Letters to keep")
    with two_tabs(browser, served.url) as (one, two):
        one.get_by_role("button", name="Delete Letters to keep").click()
        expect(one.locator("#trash")).to_contain_text("“Letters to keep” deleted.")
        two.reload()  # tab two loads the list (its own trash empty) while tab one's Undo still runs
        two.wait_for_load_state("networkidle")
        assert exists(served, kept), "another tab forgot what this tab still offers to undo"
        expect(listed(two, "Letters to keep")).to_have_count(0)  # deleted in tab one: not listed in tab two either
        one.get_by_role("button", name="Undo deleting Letters to keep").click()
        expect(listed(one, "Letters to keep")).to_have_count(1)
        expect(listed(two, "Letters to keep")).to_have_count(1)  # the Undo shows it again in tab two
        assert exists(served, kept)
        two.close()  # a tab closing with its own trash empty forgets nothing of another's
        assert exists(served, kept)


def test_the_tab_that_deleted_forgets_when_its_undo_runs_out(browser: Browser, served: Served) -> None:
    gone = new_session(served, "Ten seconds of plans")
    with two_tabs(browser, served.url) as (one, two):
        one.get_by_role("button", name="Delete Ten seconds of plans").click()
        expect(one.locator("#trash")).to_be_visible()
        two.reload()
        expect(one.locator("#trash")).to_be_hidden(timeout=20_000)  # ten seconds, then forgotten by tab one
        assert gone_soon(served, gone)
        expect(listed(two, "Ten seconds of plans")).to_have_count(0)
        one.wait_for_load_state("networkidle")
        assert records(two) == []


def test_a_killed_tabs_trash_is_forgotten_by_a_later_load(browser: Browser, served: Served) -> None:
    gone = new_session(served, "Crashed tab's trash")
    with two_tabs(browser, served.url) as (one, two):
        one.get_by_role("button", name="Delete Crashed tab's trash").click()
        expect(one.locator("#trash")).to_be_visible()
        crash(one, browser)
        assert not two.is_closed()
        assert exists(served, gone)  # the killed tab sent nothing
        two.reload()  # a later load: tab one's lock is free, so it is gone, and its trash is this tab's to finish
        expect(listed(two, "Crashed tab's trash")).to_have_count(0)
        assert gone_soon(served, gone)
        two.wait_for_load_state("networkidle")
        assert records(two) == []
    # the same from a tab killed long ago, as its record says, with no lock held for it
    old = new_session(served, "Older killed tab")
    with two_tabs(browser, served.url) as (one, _):
        one.evaluate("id => localStorage.setItem('lyra-tab:killed', JSON.stringify({trash: {[id]: Date.now() + 10000},"
                     " open: null, at: Date.now()}))", old)
        one.reload()
        expect(listed(one, "Older killed tab")).to_have_count(0)
        assert gone_soon(served, old, seconds=3)  # at once: not after the record's moment


def test_without_web_locks_only_the_moment_decides(browser: Browser, served: Served) -> None:
    """Over plain http on a LAN there are no Web Locks: another tab forgets an entry only once its moment is past,
    so an Undo still finds the conversation, and a killed tab's trash is forgotten a few seconds after its time."""
    kept = new_session(served, "Undone without locks")
    gone = new_session(served, "Killed without locks")
    legacy = new_session(served, "Listed by an older page")
    with two_tabs(browser, served.url, locks=False) as (one, two):
        assert one.evaluate("navigator.locks === undefined")
        one.get_by_role("button", name="Delete Undone without locks").click()
        two.reload()
        two.wait_for_load_state("networkidle")
        assert exists(served, kept)
        one.get_by_role("button", name="Undo deleting Undone without locks").click()
        expect(listed(two, "Undone without locks")).to_have_count(1)
        one.get_by_role("button", name="Delete Killed without locks").click()
        expect(one.locator("#trash")).to_be_visible()
        deleted = time.monotonic()
        crash(one, browser)
        # and the one list every tab shared before (a page of the older version, perhaps alive still)
        two.evaluate("id => localStorage.setItem('lyra-trash', JSON.stringify([id]))", legacy)
        two.reload()
        two.wait_for_load_state("networkidle")
        assert exists(served, gone) and exists(served, legacy)  # not before their moment: no owner proven gone
        expect(listed(two, "Killed without locks")).to_have_count(0)
        expect(listed(two, "Listed by an older page")).to_have_count(0)
        assert gone_soon(served, gone, seconds=30), "tab two never finished a killed tab's trash"
        assert time.monotonic() - deleted >= 10, "forgotten before the killed tab's Undo ran out"
        assert gone_soon(served, legacy, seconds=10)
        assert exists(served, kept)
        two.wait_for_load_state("networkidle")
        assert two.evaluate("localStorage.getItem('lyra-trash')") is None
        assert records(two) == []


def test_a_message_not_sent_survives_another_tab_deleting_its_conversation(browser: Browser,
                                                                         served: Served) -> None:
    doomed = new_session(served, "Seed packets")
    with two_tabs(browser, served.url) as (one, two):
        two.get_by_role("button", name="Seed packets", exact=True).click()
        expect(two.locator("#conversation-title")).to_have_text("Seed packets")
        two.route("**/api/sessions/*/chat", lambda route: route.abort("connectionrefused"))
        send(two, "Order more tomato seeds")
        expect(two.locator(".message.user.unsent")).to_have_count(1)
        two.fill("#composer-input", "something else, typed meanwhile")
        two.unroute("**/api/sessions/*/chat")
        one.get_by_role("button", name="Delete Seed packets").click()
        one.get_by_role("button", name="Forget Seed packets now").click()
        expect(one.locator("#trash")).to_be_hidden()
        assert gone_soon(served, doomed)
        expect(two.locator("#notice")).to_contain_text("“Seed packets” was deleted")
        expect(two.locator(".message.user.unsent")).to_have_count(1)  # what was not sent stays, with Retry
        expect(two.locator("#composer-input")).to_have_value("something else, typed meanwhile")
        two.get_by_role("button", name="Retry sending this message").click()
        expect(two.locator(".message.assistant .why-wrap")).to_have_count(1, timeout=120_000)
        expect(two.locator(".message.user .bubble")).to_have_text(["Order more tomato seeds"])
        names = {s["name"]: s["id"] for s in httpx.get(f"{served.url}/api/sessions").json()["sessions"]}
        assert "Order more tomato seeds" in names  # sent, in a new conversation named by it
        messages = httpx.get(f"{served.url}/api/sessions/{names['Order more tomato seeds']}/messages").json()
        assert messages["messages"][0]["content"] == "Order more tomato seeds"


def test_a_message_to_a_conversation_another_client_deleted_stays_and_retry_starts_a_new_one(
        browser: Browser, served: Served) -> None:
    doomed = new_session(served, "Deleted by a script")
    with two_tabs(browser, served.url) as (_, two):
        two.get_by_role("button", name="Deleted by a script", exact=True).click()
        expect(two.locator("#conversation-title")).to_have_text("Deleted by a script")
        assert httpx.delete(f"{served.url}/api/sessions/{doomed}").status_code == 200  # no tab knows of this
        send(two, "Water the basil on Friday")
        unsent = two.locator(".message.user.unsent")
        expect(unsent).to_contain_text("deleted meanwhile")
        expect(two.locator("#composer-input")).to_have_value("Water the basil on Friday")
        two.fill("#composer-input", "")
        two.get_by_role("button", name="Retry sending this message").click()
        expect(two.locator(".message.assistant .why-wrap")).to_have_count(1, timeout=120_000)
        expect(two.locator(".message.user.unsent")).to_have_count(0)
        names = [s["name"] for s in httpx.get(f"{served.url}/api/sessions").json()["sessions"]]
        assert "Water the basil on Friday" in names


@pytest.mark.parametrize("locks", [True, False], ids=["web-locks", "no-web-locks"])
def test_an_off_the_record_conversation_open_in_one_tab_outlives_another_tab_leaving_it(
        browser: Browser, served: Served, locks: bool) -> None:
    with two_tabs(browser, served.url, locks=locks) as (one, two):
        one.click("#new-off-record")
        expect(one.locator("#off-record-banner")).to_be_visible()
        off = [s for s in httpx.get(f"{served.url}/api/sessions").json()["sessions"] if s["remember"] is False]
        assert len(off) == 1
        secret = off[0]["id"]
        expect(two.locator(f".session-list li[data-id='{secret}']")).to_have_count(1)
        two.locator(f".session-list li[data-id='{secret}'] .session-name").click()
        expect(two.locator("#off-record-banner")).to_be_visible()
        two.click("#new-session")  # tab two leaves it while tab one has it open
        expect(two.locator("#off-record-banner")).to_be_hidden()
        two.wait_for_load_state("networkidle")
        assert exists(served, secret), "tab two deleted the off-the-record conversation open in tab one"
        two.reload()  # and a tab loading or closing leaves it alone too
        two.close()
        assert exists(served, secret)
        one.click("#new-session")  # the last tab with it open leaves it: deleted, as its banner said
        expect(one.locator("#off-record-banner")).to_be_hidden()
        assert gone_soon(served, secret), what_tab_shows(one)


def test_leaving_an_off_the_record_conversation_deletes_it_even_when_the_server_was_busy_at_first(
        browser: Browser, served: Served) -> None:
    with two_tabs(browser, served.url) as (one, _two):
        one.click("#new-off-record")
        expect(one.locator("#off-record-banner")).to_be_visible()
        secret = max(s["id"] for s in httpx.get(f"{served.url}/api/sessions").json()["sessions"]
                     if s["remember"] is False)
        refused: list[str] = []

        def busy_once(route):  # type: ignore[no-untyped-def]
            if route.request.method == "DELETE" and not refused:
                refused.append(route.request.url)
                route.fulfill(status=503, content_type="application/json",
                              body=json.dumps({"error": {"message": "the memory is busy"}}))
            else:
                route.continue_()

        one.route(f"**/api/sessions/{secret}", busy_once)
        one.click("#new-session")
        expect(one.locator("#off-record-banner")).to_be_hidden(timeout=20_000)
        assert refused, "the page never asked to delete it"
        assert gone_soon(served, secret), what_tab_shows(one)
        expect(one.locator("#error")).to_be_hidden()
