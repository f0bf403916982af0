"""``lyra import | export | backup | restore``: the user's history in and out (``--person``'s own), and the owner's
backup of the whole household (``--household``: everyone's memory, for disaster recovery).

Import shows a progress bar (messages/s, time left); what could not be
imported is listed with where and why, and the rest is imported anyway
(exit code 1 then). Export writes ``sessions.jsonl`` and ``memory.json``.
"""

from __future__ import annotations

import argparse
import os
import socket
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from ..config import Settings, load_settings, model_file_problems
from ..errors import ConfigError, LyraError
from ..fsutil import private_file
from ..pause_points import pause_point
from ..people import choose
from ..runtime import open_runtime
from ..store import Store
from ..store.files.outgoing import writing_outside
from ..store.household import Household, Person
from ..transfer.backup import backup, restore
from ..transfer.household_backup import restore_household, write_household_backup
from ..transfer.importer import ImportReport, import_source
from ..transfer.lyra_format import write_sessions
from ..transfer.memory_file import write_memory
from ..transfer.sources import MEMORY_FILE, SESSIONS_FILE, open_source
from .people import acting

HEARTBEAT_S = 5.0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("import", help="import a ChatGPT export (.zip or conversations.json) or a Lyra export")
    p.add_argument("path", type=Path, help="the file, or a folder written by `lyra export`")
    p.add_argument("--format", choices=("auto", "chatgpt", "lyra"), default="auto", help="default: detected")
    p.set_defaults(run=run_import)
    p = sub.add_parser("export", help="write every session (JSON Lines) and the derived memory (JSON) to a folder")
    p.add_argument("path", type=Path, help="folder to write sessions.jsonl and memory.json into")
    p.set_defaults(run=run_export)
    p = sub.add_parser("backup", help="a consistent copy of your memory's database, safe while the server runs; "
                                      "--household: the whole box (the owner)")
    p.add_argument("path", type=Path, help="the backup file to write (never overwritten); with --household, the "
                                           "folder to write lyra-household-EVERYONE-<date>.tar into")
    p.add_argument("--household", action="store_true",
                   help="back up EVERYONE's memory and the household (the owner only), for disaster recovery")
    p.set_defaults(run=run_backup)
    p = sub.add_parser("restore", help="replace the memory with a backup (the current one is kept beside the backup), "
                                       "then forget again what was forgotten after it was made")
    p.add_argument("path", type=Path, help="a file written by `lyra backup` (or `lyra backup --household`)")
    p.add_argument("--household", action="store_true",
                   help="restore a household backup (the whole box) into a new, empty data directory")
    p.add_argument("--force", action="store_true",
                   help="even if a server or dream worker heartbeat recently; a process that has the memory "
                        "open always stops a restore")
    p.add_argument("--keep", type=Path, metavar="PATH",
                   help="where to keep the memory it replaces (a new file outside the data directory; default: "
                        "beside the backup)")
    p.set_defaults(run=run_restore)


def run_import(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    problems = model_file_problems(settings, roles=("embed",))
    if problems:
        raise ConfigError("cannot import:\n  " + "\n  ".join(problems))
    source = open_source(args.path, args.format)
    console = Console(highlight=False)
    with open_runtime(settings, person=args.person) as runtime:
        store = runtime.store
        instance = f"cli-import-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        store.coord.register(instance, "cli", f"lyra import {source.path.name}")  # visible in `lyra sitrep`
        beat = [0.0]
        status, result = "failed", "interrupted"
        try:
            with Progress(TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TextColumn("messages"),
                          TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), console=console) as bar:
                task = bar.add_task("import", total=None, rate="")

                def advance(done: int, total: int) -> None:
                    speed = bar.tasks[0].speed
                    bar.update(task, completed=done, total=total, rate=f"{speed:,.0f}/s" if speed else "")
                    if time.monotonic() - beat[0] > HEARTBEAT_S:
                        beat[0] = time.monotonic()
                        store.coord.heartbeat(instance, f"{done:,} of {total:,} messages")

                report, memory_note = import_source(store, runtime.models.embed, source, progress=advance)
            status = "done"
            result = (f"{report.messages:,} messages, {report.sessions_new} new sessions, "
                      f"{len(report.problems)} problems")
            _print_report(console, report, source.format)
            if memory_note:
                console.print(memory_note)
        finally:
            store.coord.complete(instance, result, status)
    return 1 if report.problems else 0


def _print_report(console: Console, report: ImportReport, fmt: str) -> None:
    console.print(f"{fmt}: {report.sessions_new} new session(s), {report.sessions_updated} updated, "
                  f"{report.sessions_unchanged} already here; {report.messages:,} message(s) in "
                  f"{report.total_s:.1f}s ({report.messages_per_s:,.0f}/s, embedding {report.embed_s:.1f}s)")
    if report.skipped:
        console.print("skipped: " + ", ".join(f"{what} ({n})" for what, n in report.skipped.most_common()))
    for problem in report.problems:
        console.print(f"[red]not imported[/] {problem}")
    if report.messages:
        console.print("the dream cycle will summarize the new history by its real dates (`lyra dream`)")


def run_export(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    folder: Path = args.path.expanduser()
    if folder.resolve().is_relative_to(settings.data_dir.expanduser().resolve()):
        raise LyraError(f"{folder} is inside the data directory",
                        hint="export to a folder outside it: later forgets never reach a copy kept there")
    folder.mkdir(parents=True, exist_ok=True)
    sessions_tmp, memory_tmp = folder / f".{SESSIONS_FILE}.partial", folder / f".{MEMORY_FILE}.partial"
    try:
        with open_runtime(settings, person=args.person) as runtime, \
                writing_outside(runtime.store.data_dir, sessions_tmp, memory_tmp):  # a kill: swept at next open
            private_file(sessions_tmp), private_file(memory_tmp)  # 0600 whatever the umask: a person's memory
            with sessions_tmp.open("w", encoding="utf-8") as out:
                sessions, messages = write_sessions(runtime.store, out)
            write_memory(runtime.store, memory_tmp)
            pause_point("export-written")
            os.replace(sessions_tmp, folder / SESSIONS_FILE)
            os.replace(memory_tmp, folder / MEMORY_FILE)
    finally:  # a full or vanished destination leaves no half-written copy of the memory behind
        sessions_tmp.unlink(missing_ok=True)
        memory_tmp.unlink(missing_ok=True)
    print(f"exported {sessions} session(s), {messages} message(s) and the derived memory to {folder}")
    return 0


def run_backup(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    if args.household:
        return run_household_backup(settings, args)
    with open_runtime(settings, person=args.person) as runtime:
        size = backup(runtime.store, args.path)
    print(f"backed up {settings.data_dir} to {args.path} ({size / 1e6:.1f} MB); `lyra restore {args.path}` restores it")
    return 0


def run_household_backup(settings: Settings, args: argparse.Namespace) -> int:
    """The whole box, as the owner: every person's store is opened here (read-only use) and closed after."""
    stores: list[Store] = []

    def store_of(person: Person) -> Store:
        stores.append(Store(household.person_dir(person)))
        return stores[-1]

    with acting(settings, args.person, owner=True) as (household, owner):
        try:
            dest = write_household_backup(household, store_of, owner, args.path)
        finally:
            for store in stores:
                store.close()
        people = len(household.people())
    print(f"backed up the whole household ({people} people) to {dest} ({dest.stat().st_size / 1e6:.1f} MB)")
    print("it holds EVERYONE's memory: keep it as safe as the box, delete it when no longer needed; "
          f"`lyra restore --household {dest}` restores it into a new, empty data directory")
    return 0


def run_restore(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    if args.household:
        people = restore_household(args.path, settings.data_dir)
        print(f"restored the household of {len(people)} ({', '.join(p.name for p in people)}) into "
              f"{settings.data_dir}; the vector indexes rebuild on first use")
        return 0
    household = Household(settings.data_dir)
    try:  # your own memory: the person's folder (the data directory itself for the first person)
        target = household.person_dir(choose(household, settings, args.person, "memory"))
    finally:
        household.close()
    done = restore(args.path, target, force=args.force, keep=args.keep)
    print(f"restored {args.path} into {target}; the vector indexes rebuild on first use")
    if done.kept is not None:
        print(f"the memory it replaced is kept as {done.kept} (outside the data directory: later forgets do not "
              "reach it; delete it once you no longer need it)")
    if done.again.forgets:
        print(f"forgot again what {done.again.forgets} forget(s) made after this backup had removed: "
              + done.again.done.describe().removeprefix("forgot "))
    if done.again.by_text:
        print(f"{done.again.by_text} of them forgot a text: the ledger keeps no text, so a memory that held it "
              "only in this backup (one edited or deleted before that forget) is not known; forget the same text "
              "again to be sure (`lyra forget --matching TEXT`)")
    return 0
