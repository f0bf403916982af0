"""Health checks of a configuration: what `lyra doctor` prints and the settings view shows.

Each check says what it looked at, whether it is fine, and what to do if not.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

from . import __version__
from .config import DEFAULT_CHAT_FILE, Settings, model_file_problems, uses_demo_chat_model
from .errors import LyraError, StorageError
from .llm.backends import backend_of
from .llm.local import GPU_LAYERS_IGNORED, gpu_offload_supported
from .llm.registry import Models, offload_plan, suggest_chat
from .modelfiles import devices, fit
from .modelfiles.fetch import PARSER
from .modelfiles.on_disk import file_size
from .oserrors import storage_error
from .parser import FETCH_HINT, NAME, load_parser, pipeline_problem
from .runtime import Runtime
from .store import context_view


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    hint: str | None = None
    warning: bool = False  # works, but not as configured: said, not counted as a failure


def gpu_layers_ignored(settings: Settings, offload: bool) -> list[tuple[str, int]]:
    """The local roles (and their ``n_gpu_layers``) asking for GPU layers that a build without GPU offload runs
    on the CPU instead; a summary sharing chat's model is chat's."""
    if offload:
        return []
    out = []
    for role in settings.roles():
        spec = settings.role_spec(role)
        shared = role == "summary" and settings.summary_shares_chat()
        layers = backend_of(spec).gpu_layers(spec)
        if isinstance(layers, int) and layers != 0 and not shared:  # "auto" says what it chose itself
            out.append((role, layers))
    return out


GPU_LAYERS_HINT = "`make run GPU=1` builds with CUDA; or set n_gpu_layers = 0 to say what happens"


def run_checks(runtime: Runtime, *, load: bool = True) -> list[Check]:
    """Check the data dir, model files, GPU offload, the parsing pipeline, and (with ``load``) each of ``runtime``'s
    models and the parser for real."""
    settings = runtime.settings
    checks = [Check("version", True, f"lyra {__version__}"),
              Check("config", True, str(settings.config_file or "defaults (no lyra.toml found)")),
              _data_dir_check(settings), _memory_check(runtime)]
    try:
        offload = gpu_offload_supported()
        checks.append(Check("gpu offload", True, "available" if offload else
                            "not available (CPU build; `make run GPU=1` builds with CUDA)"))
        for role, layers in gpu_layers_ignored(settings, offload):
            checks.append(Check(f"models.{role}", True, GPU_LAYERS_IGNORED.format(layers=layers), GPU_LAYERS_HINT,
                                warning=True))
    except ImportError as exc:
        checks.append(Check("gpu offload", False, f"llama-cpp-python missing: {exc}", "run `make run`"))
    problems = model_file_problems(settings)
    for line in problems:
        role, _, rest = line.partition(": ")
        detail, _, hint = rest.partition(" — ")
        checks.append(Check(role, False, detail, hint or None))
    failed_roles = {line.split(":")[0].removeprefix("models.") for line in problems}
    checks.extend(gpu_checks(settings, devices.probe(), failed_roles))
    if load:
        for role in settings.roles():
            if role not in failed_roles:
                checks.append(_model_check(settings, runtime.models, role))
    checks.append(parser_check(settings, load=load))
    return checks


def parser_check(settings: Settings, *, load: bool) -> Check:
    """The English parsing pipeline in models_dir: there and verified, and (with ``load``) loads and parses."""
    where = settings.models_dir / PARSER.filename
    if not load:
        problem = pipeline_problem(settings.models_dir)
        if problem is not None:
            return Check("parser", False, problem, FETCH_HINT)
        return Check("parser", True, f"{NAME} {where}: verified (not loaded)")
    start = time.perf_counter()
    try:
        parser = load_parser(settings.models_dir)
        doc = parser("I'm a nurse at St James Hospital.")
    except LyraError as exc:
        return Check("parser", False, exc.message, exc.hint)
    entities = ", ".join(f"{e.text} ({e.label_})" for e in doc.ents) or "none"
    return Check("parser", True, f"{parser.version} {where}: loads, parses ({len(doc)} tokens, entities: {entities}) "
                                 f"({time.perf_counter() - start:.1f}s)")


def gpu_checks(settings: Settings, machine: devices.Machine, failed_roles: set[str]) -> list[Check]:
    """The machine, what ``n_gpu_layers = "auto"`` chose for each role and why, and, while the chat model is the
    demo model, the catalog's chat model for this machine."""
    checks = [Check("machine", True, machine.describe())]
    plan = offload_plan(settings, machine)
    for role, offload in plan.items():
        if offload.auto and role not in failed_roles:
            # a GPU, but not room; said once, for the role whose model it is
            short = offload.placement is not None and offload.placement.kind != "gpu" and offload.shares is None
            checks.append(Check(f"models.{role} n_gpu_layers", True, offload.reason, warning=short,
                                hint="a smaller model or quantization, or a shorter n_ctx, fits whole; `lyra models "
                                     "catalog` says what fits" if short else None))
    advice = demo_advice(settings, machine)
    if advice is not None:
        checks.append(advice)
    return checks


def demo_advice(settings: Settings, machine: devices.Machine) -> Check | None:
    """"the chat model is the demo model; `lyra models pull NAME` fits your 12 GB GPU", when it is."""
    if not uses_demo_chat_model(settings):
        return None
    demo = f"the chat model is the demo model ({DEFAULT_CHAT_FILE}), which cannot hold a conversation"
    try:
        pick = suggest_chat(settings, machine)
    except LyraError as exc:
        return Check("chat model", True, f"{demo}; the catalog cannot be read: {exc.message}", exc.hint, warning=True)
    if pick is None:
        return Check("chat model", True, f"{demo}; no model of the catalog fits this machine", warning=True,
                     hint="put a GGUF chat model in models_dir and choose it in Settings → Models")
    entry, placement = pick
    if placement.kind == "gpu":
        cards = machine.gpus
        where = (f"fits your {devices.gb(cards[0].total)} GPU" if len(cards) == 1
                 else f"fits your {len(cards)} GPUs ({devices.gb(machine.vram_total)})")
    else:
        unused = " (this llama.cpp build cannot use your GPU: `make run GPU=1` builds one that can)" if (
            machine.gpus and not machine.offload) else ""
        how = placement.text
        where = f"(the catalog's smallest) runs here {how}{unused}"
    size = file_size(entry.size)
    return Check("chat model", True, f"{demo}; `lyra models pull {entry.name}` {where} ({entry.title}, {size} "
                 f"download, at {fit.RECOMMEND_CTX:,} tokens of context)", warning=True,
                 hint=f"`lyra models pull {entry.name}`, then choose it in Settings → Models (`lyra models catalog` "
                      "lists the others)")


def _data_dir_check(settings: Settings) -> Check:
    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        probe = settings.data_dir / ".write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        named = storage_error(exc, settings.data_dir)  # full, read-only, not allowed, missing: said as such
        if named is not None:
            return Check("data dir", False, named.message, named.hint)
        return Check("data dir", False, f"{settings.data_dir}: {exc}",
                     "set data_dir or $LYRA_DATA_DIR to a writable folder")
    return Check("data dir", True, str(settings.data_dir))


def _memory_check(runtime: Runtime) -> Check:
    """How much is remembered, and with which embedding model (opens the store, loads no model)."""
    try:
        store = runtime.store
    except StorageError as exc:
        return Check("memory", False, f"cannot open {runtime.settings.data_dir / 'lyra.db'}: {exc.message}", exc.hint)
    except (LyraError, sqlite3.Error) as exc:
        return Check("memory", False, f"cannot open {runtime.settings.data_dir / 'lyra.db'}: {exc}",
                     "`sqlite3 lyra.db 'PRAGMA integrity_check'` in the data directory tells if it is damaged")
    sessions, exchanges = store.sessions.count(), store.exchanges.count()
    model = store.get_meta("embed_model") or "none yet"
    pending = context_view.pending(store)
    building = f"; context view still to build for {pending} turn(s) (`lyra reindex`, or the server)" if pending else ""
    return Check("memory", True,
                 f"{sessions} session(s), {exchanges} exchange(s); embedding model: {model}{building}")


def _model_check(settings: Settings, models: Models, role: str) -> Check:
    spec = settings.role_spec(role)
    where = backend_of(spec).where(settings, spec)
    if role == "summary" and models.shares_summary_with_chat():
        return Check(f"models.{role}", True, "same instance as chat")
    start = time.perf_counter()
    try:
        models.check([role])  # loads it, and it does its role's work once (llm/role_check.py)
        if role == "embed":
            detail = f"{spec.backend} {where}: loads, embeds, {models.embed.dim}-d vectors"
        elif role == "rerank":
            reranker = models.rerank
            assert reranker is not None  # the role is configured, or it would not be checked
            score, = reranker.rerank("hello", ["hello there"])
            detail = f"{spec.backend} {where}: loads, scores a pair ({score:.3f})"
        else:
            chat = models.chat if role == "chat" else models.summary
            tokens = chat.count_tokens("hello")
            detail = f"{spec.backend} {where}: loads, answers, n_ctx {chat.n_ctx}, 'hello' = {tokens} token(s)"
    except LyraError as exc:
        return Check(f"models.{role}", False, f"{spec.backend} {where}: {exc.message}", exc.hint)
    return Check(f"models.{role}", True, f"{detail} ({time.perf_counter() - start:.1f}s)")
