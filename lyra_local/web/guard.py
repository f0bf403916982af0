"""The guard that keeps web pages from other sites away from the server.

Lyra listens on loopback, but every page the user's browser opens runs on this
machine too. Two ways in are closed here, before any route (or the token check):

- **DNS rebinding.** A page on ``attacker.example`` points its own name at
  127.0.0.1 and reads ``/api/export`` as same-origin. Its requests still say
  ``Host: attacker.example``, so a request whose Host is not a loopback name,
  the bind address or a name in ``server.allowed_hosts`` is refused (421).
- **Cross-site requests.** A page can POST to 127.0.0.1 without reading the
  answer (``/api/dream``, ``/admin/reload``, a forget). Browsers say where such a
  request comes from (``Origin``, ``Sec-Fetch-Site``), so a state-changing
  request from another origin, or from an opaque one (``Origin: null``), is
  refused (403). A request with neither header is not from a browser page: it
  passes (and still needs the token when one is set).

It is plain ASGI so that streamed answers (chat, SSE, downloads) pass through
untouched. It must never relax a check for a path: ``/health`` is served on
loopback names like everything else.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocketClose

from ..config import ServerSettings, is_loopback

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
# Sec-Fetch-Site values a browser sends for the server's own page (or a typed-in URL).
OWN_SITE = frozenset({"same-origin", "none"})
ANY_ADDRESS = frozenset({"0.0.0.0", "[::]", ""})

HostPort = tuple[str, int | None]
# A Host header (or an Origin after its scheme): a DNS name or IPv4 address, or an IPv6 one in brackets.
_HOST = re.compile(r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9_.-]+))(?::(?P<port>[0-9]{1,5}))?")


def split_host(value: str) -> HostPort | None:
    """``'Name:8000'`` -> ``('name', 8000)``, ``'[::1]'`` -> ``('::1', None)``; None if malformed."""
    match = _HOST.fullmatch(value.strip().lower())
    if match is None:
        return None
    port = None if match["port"] is None else int(match["port"])
    if port is not None and not 0 < port < 65536:
        return None
    return match["v6"] or match["name"], port


def host_allowed(host: HostPort, extra: Iterable[str]) -> bool:
    """Loopback names always; otherwise a configured name (any port) or ``name:port`` (that port)."""
    name, port = host
    if is_loopback(name):
        return True
    for entry in extra:
        allowed = split_host(entry)
        if allowed is not None and allowed[0] == name and allowed[1] in (None, port):
            return True
    return False


def same_origin(origin: str, scheme: str, host: HostPort) -> bool:
    """Whether an ``Origin`` header names the very scheme, host and port the request was sent to."""
    origin_scheme, sep, rest = origin.strip().lower().partition("://")
    parsed = split_host(rest) if sep and origin_scheme in DEFAULT_PORTS else None
    if parsed is None:
        return False  # "null" (sandboxed frames, file:// pages, redirects) or garbage
    scheme = scheme.lower()
    return (origin_scheme == scheme and parsed[0] == host[0]
            and (parsed[1] or DEFAULT_PORTS[origin_scheme]) == (host[1] or DEFAULT_PORTS.get(scheme)))


def refusal(status: int, kind: str, message: str, hint: str) -> JSONResponse:
    """The API's usual error shape, so the page and OpenAI clients show the message."""
    return JSONResponse({"error": {"message": message, "type": kind, "hint": hint}}, status_code=status)


class HostOriginGuard:
    """ASGI middleware: refuses a foreign Host everywhere and a cross-site Origin on writes.

    ``server`` is read on every request, so a reload that changes ``allowed_hosts``
    applies at once; ``bind_host`` is the address ``lyra serve`` actually bound.
    """

    def __init__(self, app: ASGIApp, *, server: Callable[[], ServerSettings], bind_host: str) -> None:
        self.app = app
        self.server = server
        bind_host = bind_host.strip("[]").lower()
        self.bind_host = f"[{bind_host}]" if ":" in bind_host else bind_host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        problem = self.check(scope)
        if problem is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await WebSocketClose(code=1008, reason="refused by Lyra's host and origin guard")(scope, receive, send)
        else:
            await problem(scope, receive, send)

    def allowed_names(self) -> tuple[str, ...]:
        extra = self.server().allowed_hosts
        return extra if self.bind_host in ANY_ADDRESS else (*extra, self.bind_host)

    def check(self, scope: Scope) -> JSONResponse | None:
        """The refusal for this request, or None to let it through."""
        headers = _headers(scope)
        hosts = headers.get("host", [])
        host = split_host(hosts[0]) if len(hosts) == 1 else None
        if host is None or not host_allowed(host, self.allowed_names()):
            shown = ", ".join(h[:100] for h in hosts) or "(none)"
            return refusal(421, "misdirected_host", f"this server does not answer to the host name {shown}",
                           "Lyra answers only to localhost, 127.0.0.1 and [::1], so that no web page can "
                           "reach it through a name of its own (DNS rebinding); to use this name, add it "
                           "to server.allowed_hosts (LYRA_SERVER__ALLOWED_HOSTS) and reload")
        method = scope.get("method", "GET").upper() if scope["type"] == "http" else "GET"
        if method not in STATE_CHANGING:
            return None
        origins = headers.get("origin", [])
        fetch_site = headers.get("sec-fetch-site", [""])[0].lower()
        cross = (len(origins) > 1 or (len(origins) == 1 and not same_origin(origins[0], scope["scheme"], host))
                 or (fetch_site != "" and fetch_site not in OWN_SITE))
        if not cross:
            return None
        came_from = origins[0][:100] if origins else f"a {fetch_site} page"
        return refusal(403, "cross_origin", f"refused a {method} from {came_from}: only Lyra's own page may "
                       "change anything",
                       "open Lyra at its own address (http://127.0.0.1:PORT) and do it there; a script or "
                       "client of your own should send no Origin header (with the API token if one is set)")


def _headers(scope: Scope) -> dict[str, list[str]]:
    """Every value of each header, so a repeated Host or Origin is seen, not silently merged."""
    found: dict[str, list[str]] = {}
    for key, value in scope.get("headers", ()):
        found.setdefault(key.decode("latin-1").lower(), []).append(value.decode("latin-1"))
    return found
