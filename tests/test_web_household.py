"""The household in a real headless Chromium, against the real app served by uvicorn on scripted fake
models, one browser context per device: the owner adds people on the People page (setting their own password
first), two people chat at the same time and each sees only their own conversations, search results and memory,
a child logs in with a PIN and reads the household memory without editing it, a removal says what it forgets,
"Log out everywhere" ends the other device's session, a wrong password is refused and then rate-limited, and one
person on loopback sees the page as before: no login, no person in the header. Screenshots go to
test-output/screenshots/."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator, Sequence

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from lyra_local.config import Settings
from lyra_local.llm.base import GenerationOptions, Message
from lyra_local.llm.registry import Models
from lyra_local.web import create_app

from .fakes import FakeChatModel, FakeEmbedder
from .test_web_ui import opened, send, shot
from .threaded_server import serve_in_thread

pytestmark = [pytest.mark.slow]

CONFIG = '[companion]\nuser_name = "Ada"\n'
ADA, BEN, CLEO = ("Ada", "ada-password-1"), ("Ben", "ben-password-1"), ("Cleo", "4321")


def noted_slowly(messages: Sequence[Message], options: GenerationOptions | None) -> str:
    """A reply that takes a moment, so that two people's replies are written at the same time."""
    time.sleep(0.4)
    return "Noted, I will remember that."


@contextlib.contextmanager
def household(make_settings: Callable[..., Settings], config: str = CONFIG) -> Iterator[str]:
    """A fresh Lyra (its first person: Ada, from the settings' user name) on loopback; yields its URL."""
    settings = make_settings(config)
    models = Models(settings, chat=FakeChatModel(respond=noted_slowly), embed=FakeEmbedder())  # type: ignore[arg-type]
    with serve_in_thread(create_app(settings, models=models)) as url:
        yield url


def log_in(page: Page, name: str, secret: str, *, pin: bool = False) -> None:
    expect(page.locator("#login-dialog")).to_be_visible()
    page.fill("#login-name", name)
    if pin:
        page.click("#login-pin")
        expect(page.locator("#login-secret")).to_have_attribute("inputmode", "numeric")
    page.fill("#login-secret", secret)
    page.click("#login-submit")
    expect(page.locator("#person-name")).to_have_text(name)  # the page reloaded as that person
    expect(page.locator("#login-dialog")).to_be_hidden()
    page.wait_for_load_state("networkidle")


def menu(page: Page, item: str) -> None:
    """Chooses ``item`` in the person's menu in the header."""
    page.click("#person-menu > summary")
    page.locator(".person-menu-items").get_by_role("button", name=item, exact=True).click()


def replied(page: Page, count: int) -> None:
    expect(page.locator(".message.assistant .why-wrap")).to_have_count(count, timeout=30_000)


def listed(page: Page, *names: str) -> None:
    """The conversation list shows exactly ``names``."""
    expect(page.locator(".session-list .session-name")).to_have_text(list(names))


def search(page: Page, words: str) -> None:
    if not page.locator("#search-input").is_visible():
        page.click(".tab[data-panel=search]")
    page.locator("#search-status").evaluate("e => { e.textContent = ''; }")
    page.fill("#search-input", words)
    page.press("#search-input", "Enter")
    expect(page.locator("#search-status")).to_have_text(re.compile(r"found\."))


def open_memory(page: Page) -> None:
    if not page.locator("#fact-form").is_visible():
        page.click(".tab[data-panel=memory]")


def test_one_person_on_loopback_sees_no_login_and_no_person_controls(browser: Browser,
                                                                     make_settings: Callable[..., Settings]) -> None:
    with household(make_settings) as url, opened(browser, url, settled=True) as page:
        assert httpx.get(f"{url}/api/auth/state").json()["login_required"] is False
        expect(page.locator("#login-dialog")).to_be_hidden()
        expect(page.locator("#person-menu")).to_be_hidden()
        send(page, "Hello there, just me here.")
        replied(page, 1)
        open_memory(page)
        expect(page.locator("#h-world")).to_be_visible()
        expect(page.locator("#household-memory")).to_be_hidden()  # alone, the core memory is all there is
        page.click(".tab[data-panel=settings]")
        expect(page.locator("#settings-people")).to_be_visible()  # the way to add a second person
        shot(page, "household-alone")


def test_the_server_token_is_still_asked_for_and_acts_as_the_owner(browser: Browser,
                                                                   make_settings: Callable[..., Settings]) -> None:
    token = "s3cret-0123456789"
    with household(make_settings, CONFIG + f'[server]\napi_token = "{token}"\n') as url, \
            opened(browser, url) as page:
        expect(page.locator("#token-dialog")).to_be_visible()  # not the login: Ada has no password to log in with
        expect(page.locator("#login-dialog")).to_be_hidden()
        page.fill("#token-input", token)
        page.click("#token-dialog button[value=ok]")
        expect(page.locator("#person-name")).to_have_text("Ada")  # the owner, with the menu (a login is asked)
        expect(page.locator("#person-menu")).to_be_visible()
        assert page.evaluate("localStorage.getItem('lyra-token')") == token


def test_two_people_see_only_their_own_and_the_owner_manages_people(browser: Browser,
                                                                    make_settings: Callable[..., Settings]) -> None:
    with household(make_settings) as url, opened(browser, url, settled=True) as ada:
        # Ada, alone and logged in to nothing, adds Ben: first she is asked for a password of her own
        ada.click(".tab[data-panel=settings]")
        ada.click("#settings-people")
        expect(ada.locator("#people-list .person")).to_have_count(1)
        expect(ada.locator("#own-secret-form")).to_be_visible()
        ada.fill("#new-person-name", BEN[0])
        ada.fill("#new-person-secret", BEN[1])
        ada.click("#person-form button[type=submit]")
        expect(ada.locator("#own-secret-why")).to_contain_text("Set your own password first")
        ada.fill("#own-secret", ADA[1])
        ada.click("#own-secret-form button[type=submit]")
        expect(ada.locator("#own-secret-form")).to_be_hidden()
        ada.click("#person-form button[type=submit]")
        expect(ada.locator("#people-status")).to_contain_text("Ben was added")
        ada.fill("#new-person-name", CLEO[0])
        ada.select_option("#new-person-kind", "child")
        expect(ada.locator("#new-person-secret")).to_have_attribute("inputmode", "numeric")
        ada.fill("#new-person-secret", CLEO[1])
        ada.click("#person-form button[type=submit]")
        expect(ada.locator("#people-list .person")).to_have_count(3)
        shot(ada, "household-people")
        assert httpx.get(f"{url}/api/auth/state").json()["login_required"] is True
        ada.reload()  # she stays logged in: setting her password logged her in
        expect(ada.locator("#person-name")).to_have_text("Ada")
        expect(ada.locator("#person-menu")).to_be_visible()
        expect(ada.locator("#login-dialog")).to_be_hidden()

        with opened(browser, url, settled=True) as ben, opened(browser, url, settled=True) as cleo:
            expect(ben.locator("#session-list")).to_be_hidden()  # nothing of anyone shows behind the login
            shot(ben, "household-login")
            log_in(ben, *BEN)
            both_chat_and_see_only_their_own(ada, ben)
            the_household_memory_is_shared_and_adults_edit_it(ada, ben)
            log_in(cleo, *CLEO, pin=True)
            a_child_reads_the_household_memory_and_manages_no_one(cleo)
            send(cleo, "My favourite colour is teal")
            replied(cleo, 1)
            listed(cleo, "My favourite colour is teal")  # hers alone, nobody else's
            removing_says_what_is_forgotten(ada, cleo)
            tokens_act_as_their_person_until_revoked(ben, url)
            with opened(browser, url, settled=True) as ben_elsewhere:
                log_in(ben_elsewhere, *BEN)
                ben.get_by_role("button", name="Delete My kite is called Periwinkle").click()  # in his trash
                expect(ben.locator("#trash")).to_contain_text("deleted")
                menu(ben_elsewhere, "Log out everywhere")
                expect(ben_elsewhere.locator("#login-dialog")).to_be_visible()
                ben.click(".tab[data-panel=memory]")  # Ben's next action on the other device: the login
                expect(ben.locator("#login-dialog")).to_be_visible()
                expect(ben.locator("#messages")).to_be_hidden()
            what_waits_in_a_trash_stays_its_persons(ben)


def what_waits_in_a_trash_stays_its_persons(device: Page) -> None:
    """Ada logs in where Ben's login ended with a conversation in his trash: his conversation 1 is not her
    conversation 1, and nothing of hers is forgotten; back as Ben, his trash is finished as he asked."""
    log_in(device, *ADA)
    listed(device, "My bicycle is called Marmalade")
    menu(device, "Switch person")
    expect(device.locator("#login-dialog")).to_be_visible()
    log_in(device, *BEN)
    assert device.evaluate("fetch('/api/sessions').then((r) => r.json())")["sessions"] == []
    listed(device)


def both_chat_and_see_only_their_own(ada: Page, ben: Page) -> None:
    send(ada, "My bicycle is called Marmalade")
    send(ben, "My kite is called Periwinkle")  # while Ada's reply is still being written
    replied(ada, 1)
    replied(ben, 1)
    listed(ada, "My bicycle is called Marmalade")
    listed(ben, "My kite is called Periwinkle")
    for page, mine, theirs in ((ada, "Marmalade", "Periwinkle"), (ben, "Periwinkle", "Marmalade")):
        search(page, theirs)
        expect(page.locator("#search-results")).not_to_contain_text(theirs)
        search(page, mine)
        expect(page.locator("#search-results")).to_contain_text(mine)
    for page, key, value in ((ada, "bicycle", "Marmalade the bicycle"), (ben, "kite", "Periwinkle the kite")):
        open_memory(page)
        page.fill("#fact-key", key)
        page.fill("#fact-value", value)
        page.click("#fact-form button[type=submit]")
        expect(page.locator("#profile")).to_contain_text(value)
    ada.reload()
    open_memory(ada)
    expect(ada.locator("#profile")).to_contain_text("Marmalade the bicycle")
    expect(ada.locator("#profile")).not_to_contain_text("Periwinkle")
    expect(ben.locator("#profile")).not_to_contain_text("Marmalade")
    ben.reload()
    listed(ben, "My kite is called Periwinkle")


def the_household_memory_is_shared_and_adults_edit_it(ada: Page, ben: Page) -> None:
    open_memory(ada)
    box = ada.locator("#household-memory")
    expect(box).to_contain_text("Shared with everyone in the household")
    ada.fill("#household-input", "The dog is called Rex. Bins go out on Tuesday.")
    ada.click("#household-save")
    expect(ada.locator("#household-who")).to_contain_text("Last written by Ada")
    open_memory(ben)
    expect(ben.locator("#household-memory")).to_contain_text("Shared with everyone in the household")
    expect(ben.locator("#household-input")).to_have_value("The dog is called Rex. Bins go out on Tuesday.")
    expect(ben.locator("#household-save")).to_be_visible()  # an adult edits it
    ben.click("#household-history > summary")
    expect(ben.locator("#household-versions")).to_contain_text("Ada")
    shot(ben, "household-memory")


def a_child_reads_the_household_memory_and_manages_no_one(cleo: Page) -> None:
    expect(cleo.locator("#person-kind")).to_have_text("child")
    open_memory(cleo)
    expect(cleo.locator("#household-input")).to_have_value("The dog is called Rex. Bins go out on Tuesday.")
    expect(cleo.locator("#household-input")).to_have_attribute("readonly", "")
    expect(cleo.locator("#household-save")).to_be_hidden()
    cleo.click("#person-menu > summary")
    expect(cleo.locator("#open-people")).to_be_hidden()
    cleo.click("#person-menu > summary")


def removing_says_what_is_forgotten(ada: Page, cleo: Page) -> None:
    menu(ada, "People")
    ada.get_by_role("button", name="Remove Cleo").click()
    question = ada.locator("#confirm-text")
    expect(question).to_have_text(re.compile(
        r"^Removing Cleo forgets 1 conversation, 2 messages and \d+ memor(y|ies)(, and revokes \d+ API tokens?)?; "
        r"this cannot be undone\.$"))
    shot(ada, "household-remove")
    ada.click("#confirm-ok")
    expect(ada.locator("#people-list .person")).to_have_count(2)
    expect(ada.locator("#people-list")).not_to_contain_text("Cleo")
    send(cleo, "Are you still there?")  # her next action: her login has ended
    expect(cleo.locator("#login-dialog")).to_be_visible()
    expect(cleo.locator("#messages")).to_be_hidden()  # nothing of hers stays on the page behind the login


def tokens_act_as_their_person_until_revoked(ben: Page, url: str) -> None:
    menu(ben, "API tokens")
    ben.fill("#token-name", "laptop scripts")
    ben.click("#token-form button[type=submit]")
    secret = ben.locator("#token-secret-value").inner_text()
    assert secret.startswith("lyra_")
    expect(ben.locator("#token-list")).to_contain_text("laptop scripts")
    shot(ben, "household-tokens")
    me = httpx.get(f"{url}/api/me", headers={"Authorization": f"Bearer {secret}"})
    assert me.status_code == 200 and me.json()["name"] == "Ben"
    ben.get_by_role("button", name="Done").click()
    expect(ben.locator("#token-secret")).to_be_hidden()
    ben.get_by_role("button", name="Revoke the token laptop scripts").click()
    ben.click("#confirm-ok")
    expect(ben.locator("#token-list")).not_to_contain_text("laptop scripts")
    assert httpx.get(f"{url}/api/me", headers={"Authorization": f"Bearer {secret}"}).status_code == 401


def test_a_wrong_password_is_refused_then_rate_limited(browser: Browser,
                                                       make_settings: Callable[..., Settings]) -> None:
    with household(make_settings) as url:
        with httpx.Client(base_url=url) as owner:  # alone and logged in to nothing, Ada chooses her password
            assert owner.put("/api/me/secret", json={"secret": ADA[1]}).status_code == 200  # and is logged in
            assert owner.post("/api/people", json={"name": BEN[0], "kind": "adult",
                                                   "secret": BEN[1]}).status_code == 200
        with opened(browser, url, settled=True) as page:
            for _ in range(5):
                page.fill("#login-name", "Ben")
                page.fill("#login-secret", "not-his-password")
                page.click("#login-submit")
                expect(page.locator("#login-error")).to_have_text(
                    "That name and password (or PIN) do not match. Check both and try again.")
                expect(page.locator("#login-submit")).to_be_enabled()
                page.locator("#login-error").evaluate("e => { e.textContent = ''; }")
            page.fill("#login-secret", BEN[1])  # even the right one waits now
            page.click("#login-submit")
            expect(page.locator("#login-error")).to_have_text(re.compile(
                r"^Too many wrong tries\. For your safety, logging in is paused: try again in 1[4-6] minutes\.$"))
            shot(page, "household-rate-limited")
            expect(page.locator("#person-menu")).to_be_hidden()
