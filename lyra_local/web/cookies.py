"""Lyra's two cookies, the login (``lyra_session``) and the device (``lyra_device``, ``web/logins.py``): how
they are named, set, read and ended.

Cookies are not kept apart by port: any other page served on the same host
(another program's web UI on 127.0.0.1:9000, say) can set a ``lyra_session``
with a longer path, which the browser then sends first ("cookie tossing"), so
Lyra would act as whoever's login that page planted. Two defences:

- where the browser keeps ``Secure`` cookies for the page (https, and
  ``http://localhost``, a secure context) the cookies carry the ``__Host-``
  prefix: ``Secure``, ``Path=/``, no ``Domain``, so no page can set one with
  another path; that name is read first;
- a request carrying the same cookie twice is refused (``TwoCookies``), never
  resolved by taking one of them.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.requests import Request
from starlette.responses import Response

from ..errors import LyraError
from .guard import split_host

SESSION = "lyra_session"
DEVICE = "lyra_device"
HOST_PREFIX = "__Host-"


class TwoCookies(LyraError):
    """The browser sent a Lyra cookie twice: one was planted by another page on this host."""

    status_code = 400

    def __init__(self, name: str) -> None:
        super().__init__(f"this browser sent two {name} cookies: another page served on this host (another port) "
                         "set one, so neither is taken",
                         hint="clear this site's cookies in the browser (site settings) and log in again; open "
                              "Lyra at http://localhost:PORT, where its cookies cannot be planted")


def secure_page(scheme: str, host_header: str) -> bool:
    """Whether the browser keeps ``Secure`` cookies for the page: https, or http://localhost."""
    host = split_host(host_header)
    return scheme in ("https", "wss") or (host is not None and host[0] == "localhost")


def read(headers: Mapping[str, str], base: str) -> str | None:
    """The cookie ``base`` (its ``__Host-`` form first), or None; ``TwoCookies`` when either came twice."""
    pairs = [part.strip().partition("=") for part in headers.get("cookie", "").split(";")]
    for name in (HOST_PREFIX + base, base):
        values = [value for key, sep, value in pairs if sep and key == name]
        if len(values) > 1:
            raise TwoCookies(base)
        if values:
            return values[0]
    return None


def put(request: Request, response: Response, base: str, value: str, max_age: int) -> None:
    """Set ``base`` for the whole site, ``HttpOnly`` and ``SameSite=Strict``, ``__Host-`` where it can be."""
    secure = secure_page(request.url.scheme, request.headers.get("host", ""))
    response.set_cookie(HOST_PREFIX + base if secure else base, value, max_age=max_age, httponly=True,
                        samesite="strict", secure=secure, path="/")


def end(request: Request, response: Response, base: str) -> None:
    """End ``base`` in the browser, under whichever name this page gave it."""
    secure = secure_page(request.url.scheme, request.headers.get("host", ""))
    response.delete_cookie(HOST_PREFIX + base if secure else base, path="/", httponly=True, samesite="strict",
                           secure=secure)
