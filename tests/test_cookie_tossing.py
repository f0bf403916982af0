"""No other page on the same host can plant a login into Lyra's ("cookie tossing"): a request with
two login cookies is refused, and on http://localhost (a secure context) the cookies carry the ``__Host-``
prefix, which no page can set with another path.

The real app served by uvicorn on scripted models; the page in headless Chromium.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from playwright.sync_api import Browser, expect

from lyra_local.config import Settings

from .test_web_household import ADA, BEN, household, log_in
from .test_web_ui import opened


def people(url: str) -> tuple[str, str]:
    """Ada (the owner) and Ben, each logged in; their session cookies."""
    with httpx.Client(base_url=url) as ada, httpx.Client(base_url=url) as ben:
        assert ada.put("/api/me/secret", json={"secret": ADA[1]}).status_code == 200
        assert ada.post("/api/people", json={"name": BEN[0], "secret": BEN[1]}).status_code == 200
        assert ben.post("/api/auth/login", json={"name": BEN[0], "secret": BEN[1]}).status_code == 200
        return ada.cookies["lyra_session"], ben.cookies["lyra_session"]


def test_a_request_with_two_login_cookies_is_refused(make_settings: Callable[..., Settings]) -> None:
    with household(make_settings) as url:
        adas, bens = people(url)
        # Ben's page on another port of this host set his own login for /api: the browser sends it first
        planted = httpx.get(f"{url}/api/me", headers={"Cookie": f"lyra_session={bens}; lyra_session={adas}"})
        assert planted.status_code == 400 and planted.json()["error"]["type"] == "two_cookies"
        assert httpx.get(f"{url}/api/me", headers={"Cookie": f"lyra_session={adas}"}).json()["name"] == "Ada"


@pytest.mark.slow
def test_on_localhost_the_login_cookie_has_the_host_prefix(browser: Browser,
                                                           make_settings: Callable[..., Settings]) -> None:
    with household(make_settings) as url:
        _, bens = people(url)
        localhost = url.replace("127.0.0.1", "localhost")
        with opened(browser, localhost, settled=True) as page:
            log_in(page, *ADA)
            names = {c["name"]: c for c in page.context.cookies()}
            assert names["__Host-lyra_session"]["secure"] and names["__Host-lyra_session"]["path"] == "/"
            assert "__Host-lyra_device" in names and "lyra_session" not in names
            # another page on this host plants Ben's login for /api (a longer path, sent first): not taken
            page.context.add_cookies([{"name": "lyra_session", "value": bens, "domain": "localhost",
                                       "path": "/api"}])
            page.reload()
            expect(page.locator("#person-name")).to_have_text("Ada")
            assert page.evaluate("fetch('/api/me').then(r => r.json())")["name"] == "Ada"
