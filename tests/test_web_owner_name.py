"""The owner names themself: the first person is called "Owner" until they say otherwise, so the
page asks for their name with their first password, and lets them change it (and their password, given the
current one) later; `lyra people rename` does it from the terminal. The real app served by uvicorn on
scripted models, the page in headless Chromium; the real command in this process."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from playwright.sync_api import Browser, expect

from lyra_local.config import Settings

from .test_cli_people import Lyra, lyra  # noqa: F401  (fixture)
from .test_web_household import household
from .test_web_ui import opened, shot


@pytest.mark.slow
def test_the_owner_names_themself_with_their_first_password_and_renames_later(
        browser: Browser, make_settings: Callable[..., Settings]) -> None:
    with household(make_settings, config="") as url, opened(browser, url, settled=True) as page:
        assert httpx.get(f"{url}/api/me").json()["name"] == "Owner"  # nobody said otherwise yet
        page.click(".tab[data-panel=settings]")
        page.click("#settings-people")
        expect(page.locator("#own-name")).to_have_value("Owner")
        page.fill("#own-name", "Maya")
        page.fill("#own-secret", "maya-password-1")
        page.click("#own-secret-form button[type=submit]")
        expect(page.locator("#people-status")).to_contain_text("Your password is set, Maya")
        expect(page.locator("#people-list .person strong")).to_have_text(["Maya"])
        page.get_by_role("button", name="Change your name").click()
        page.get_by_label("Your name").last.fill("Maya Rose")
        page.locator("#people-list form button[type=submit]").click()
        expect(page.locator("#people-list .person strong")).to_have_text(["Maya Rose"])
        page.get_by_role("button", name="Change your password").click()
        page.get_by_label("Your current password").fill("maya-password-1")
        page.get_by_label("Your new password").fill("maya-password-2")
        page.locator("#people-list form button[type=submit]").click()
        expect(page.locator("#people-status")).to_have_text("Your password was changed.")
        shot(page, "household-owner-named")
        login = httpx.post(f"{url}/api/auth/login", json={"name": "maya rose", "secret": "maya-password-2"})
        assert login.status_code == 200 and login.json()["person"]["name"] == "Maya Rose"


def test_lyra_people_rename(lyra: Lyra) -> None:  # noqa: F811
    assert lyra("people", "passwd", "--secret-stdin", stdin="owner-pass-1\n")[0] == 0
    code, out, err = lyra("people", "rename", "Maya")
    assert code == 0, err
    assert "is now called Maya" in out
    assert "Maya\towner" in lyra("people", "list")[1]
