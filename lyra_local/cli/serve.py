"""``lyra serve``: run the web app and API with uvicorn."""

from __future__ import annotations

import argparse
import ipaddress

from ..config import Settings, load_settings, missing_model_files
from ..errors import ConfigError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("serve", help="run the web UI and the API (default 127.0.0.1:8000)")
    parser.add_argument("--host", help="bind address (default: server.host, 127.0.0.1)")
    parser.add_argument("--port", type=int, help="TCP port (default: server.port, 8000)")
    parser.set_defaults(run=run)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_can_serve(settings: Settings, host: str) -> None:
    """Refuse an open bind without a token, and missing model files, before starting."""
    if not is_loopback(host) and settings.server.api_token is None:
        raise ConfigError(f"refusing to listen on {host} without an API token",
                          hint="set server.api_token (or $LYRA_SERVER__API_TOKEN), or bind to 127.0.0.1")
    missing = missing_model_files(settings)
    if missing:
        raise ConfigError("cannot start:\n  " + "\n  ".join(missing))


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from ..web import create_app

    settings = load_settings(args.config)
    host = args.host or settings.server.host
    port = args.port or settings.server.port
    check_can_serve(settings, host)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    app = create_app(settings, config_path=args.config, handle_sighup=True)
    print(f"Lyra on http://{host}:{port} (data: {settings.data_dir}; reload: kill -HUP or POST /admin/reload)")
    uvicorn.run(app, host=host, port=port, log_level="warning")
    return 0
