"""An ASGI app served by a real uvicorn on a free loopback port, in a thread of the test process.

For what only a real server shows (a hang-up mid-stream, a kept-alive
connection closed after a failure) on an app the test built itself: on fake
models, or with a route of its own.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn

from lyra_local.config import ServerSettings
from lyra_local.web.serving import uvicorn_options

from .conftest import free_port


@contextlib.contextmanager
def serve_in_thread(app: Any, timeout: float = 30.0) -> Iterator[str]:
    """Serve ``app`` (its lifespan included) until the block ends, as `lyra serve` does (``uvicorn_options``);
    yields its base URL."""
    port = free_port()
    lyra = getattr(getattr(app, "state", None), "lyra", None)
    options = uvicorn_options(lyra.settings.server if lyra is not None else ServerSettings())
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on", **options))
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
