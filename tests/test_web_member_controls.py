"""A member of the household is never shown what only the owner may do: the first-run guide's
Download and use, the model manager's Apply, downloads and the models folder's files, which the server would
refuse them. The real app served by uvicorn on scripted models, the page in headless Chromium."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from playwright.sync_api import Browser, expect

from lyra_local.config import Settings

from .test_web_household import ADA, BEN, household, log_in
from .test_web_ui import opened, shot

pytestmark = [pytest.mark.slow]
OWNER_ONLY = ("#first-run-download", "#first-run-models", "#models-apply", "#pull-own", "#model-files-box")


def test_a_member_sees_no_owner_only_controls(browser: Browser,
                                              make_settings: Callable[..., Settings]) -> None:
    with household(make_settings) as url:
        with httpx.Client(base_url=url) as ada:
            assert ada.put("/api/me/secret", json={"secret": ADA[1]}).status_code == 200
            assert ada.post("/api/people", json={"name": BEN[0], "secret": BEN[1]}).status_code == 200
            assert ada.get("/api/settings").json()["demo_chat_model"] is True  # the first-run guide shows
        with opened(browser, url, settled=True) as page:
            log_in(page, *BEN)
            expect(page.locator("#first-run")).to_be_visible()
            expect(page.locator("#first-run-member")).to_be_visible()
            expect(page.locator("#first-run-import")).to_be_visible()
            page.click(".tab[data-panel=settings]")
            expect(page.locator("#models-owner-note")).to_be_visible()
            for control in OWNER_ONLY:
                expect(page.locator(control)).to_be_hidden()
            shot(page, "household-member-settings")
        with opened(browser, url, settled=True) as page:
            log_in(page, *ADA)
            expect(page.locator("#first-run-models")).to_be_visible()
            expect(page.locator("#first-run-member")).to_be_hidden()
            page.click(".tab[data-panel=settings]")
            expect(page.locator("#models-apply")).to_be_visible()
            expect(page.locator("#models-owner-note")).to_be_hidden()
