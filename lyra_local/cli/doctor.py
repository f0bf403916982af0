"""``lyra doctor``: check that everything works, the checks first; the resolved configuration with ``--config``."""

from __future__ import annotations

import argparse
import json

from ..config import load_settings
from ..diagnostics import run_checks
from ..runtime import open_runtime


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("doctor", help="check the configuration, the models and the GPU")
    parser.add_argument("--no-load", action="store_true", help="do not load the models, only check files")
    parser.add_argument("--config", dest="show_config", action="store_true",
                        help="print the resolved configuration after the checks")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    with open_runtime(settings, person=args.person, need="household") as runtime:
        checks = run_checks(runtime, load=not args.no_load)
    print("checks:")
    for check in checks:
        status = "FAIL" if not check.ok else "warn" if check.warning else "ok"
        print(f"  [{status}] {check.name}: {check.detail}")
        if check.hint and (not check.ok or check.warning):
            print(f"         fix: {check.hint}")
    failed = sum(not c.ok for c in checks)
    print(f"\n{'all good' if not failed else f'{failed} problem(s) found'}")
    if args.show_config:
        print("\nresolved configuration:")
        shown = settings.model_dump(mode="json", exclude={"config_file"})
        print("  " + json.dumps(shown, indent=2).replace("\n", "\n  "))
    else:
        print("(lyra doctor --config prints the resolved configuration)")
    return 1 if failed else 0
