"""How uvicorn serves the app: whose address a request comes from.

Uvicorn believes ``X-Forwarded-For`` from 127.0.0.1 by default, so any local
client (a browser's page included, through the proxy of its choosing) could say
it is anyone and get a fresh count of login failures per request. Here forwarded
headers are off unless ``server.trusted_proxies`` names the proxy; then only
what those addresses forward is believed. ``lyra serve`` and the tests' threaded
server both take their options from here, so they serve alike.
"""

from __future__ import annotations

from typing import Any

from ..config import ServerSettings


def uvicorn_options(server: ServerSettings) -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.run`` / ``uvicorn.Config`` besides the app, host and port."""
    trusted = list(server.trusted_proxies)
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": trusted}
