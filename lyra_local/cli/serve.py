"""``lyra serve``: run the web app and API with uvicorn."""

from __future__ import annotations

import argparse

from ..config import Settings, is_loopback, load_settings, model_file_problems
from ..errors import ConfigError
from ..fsutil import private_dir


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("serve", help="run the web UI and the API (default 127.0.0.1:8000)")
    parser.add_argument("--host", help="bind address (default: server.host, 127.0.0.1)")
    parser.add_argument("--port", type=int, help="TCP port (default: server.port, 8000)")
    parser.set_defaults(run=run)


def check_can_serve(settings: Settings, host: str) -> None:
    """Refuse an open bind without a token, and missing or broken model files, before starting.

    An empty or short token never gets this far: loading the settings refuses it.
    """
    if not is_loopback(host.strip("[]")) and settings.server.api_token is None:
        raise ConfigError(f"refusing to listen on {host} without an API token",
                          hint="set server.api_token (or $LYRA_SERVER__API_TOKEN) to a long random string, "
                               "e.g. python3 -c \"import secrets; print(secrets.token_urlsafe(24))\"; "
                               "or bind to 127.0.0.1")
    problems = model_file_problems(settings)
    if problems:
        raise ConfigError("cannot start:\n  " + "\n  ".join(problems))


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from ..web import create_app
    from ..web.serving import uvicorn_options

    settings = load_settings(args.config)
    host = args.host or settings.server.host
    port = args.port or settings.server.port
    check_can_serve(settings, host)
    # The app's Host guard also answers to the address actually bound (when it is not 0.0.0.0).
    settings = settings.model_copy(update={"server": settings.server.model_copy(update={"host": host, "port": port})})
    private_dir(settings.data_dir)
    app = create_app(settings, config_path=args.config, handle_sighup=True)
    print(f"Lyra on http://{host}:{port} (data: {settings.data_dir}; reload: kill -HUP or POST /admin/reload)")
    if host.strip("[]") in ("0.0.0.0", "::") and not settings.server.allowed_hosts:
        print("Answering to loopback names only: to open it from another device, add the name or address "
              "it will use to server.allowed_hosts (LYRA_SERVER__ALLOWED_HOSTS)")
    uvicorn.run(app, host=host, port=port, log_level="warning", **uvicorn_options(settings.server))
    return 0
