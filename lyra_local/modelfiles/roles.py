"""What a GGUF's header alone says about the roles it can serve: read before llama.cpp is asked to run it.

Most of a role's check needs the model to do the work (``llm/role_check.py``),
but some files are settled by their header, and must be: an encoder asked to
generate fails inside llama-cpp-python, and llama.cpp forces rank pooling on
any file it is asked to re-rank with, so an embedding or chat model returns
finite scores, one per pair, that mean nothing (no run tells them apart from a
re-ranker's). Pure functions of a ``GGUFSummary``: ``config.model_file_problems``
(every command that starts on a config, and a reload) and the role check share them.
"""

from __future__ import annotations

from ..roles import MADE_FOR, Role, role_words, runs
from .gguf_header import GGUFSummary

ENCODERS = frozenset({"bert", "nomic-bert", "jina-bert-v2", "jina-bert-v3", "modern-bert", "neo-bert", "t5encoder"})
ROLE_HINT = ("choose a GGUF made for this role: Settings → Models (GET /api/models/files) says what each file looks "
             "made for")


def header_note(summary: GGUFSummary | None, role: str) -> str | None:
    """What a file's header says it is, when that is not what ``role`` needs (a note for a refusal)."""
    if summary is None:
        return None
    wanted = runs(role)
    made_for = summary.role_hint
    if made_for == wanted:
        return None
    pooling = "it has no pooling" if summary.pooling is None else f"its pooling is {summary.pooling}"
    return f"{pooling}; it is {MADE_FOR[Role(made_for)]}"


def header_problem(summary: GGUFSummary | None, role: str) -> str | None:
    """Why a local file cannot serve ``role``, from its header alone, or None (the role check then decides)."""
    if summary is None:
        return None
    if runs(role) is Role.CHAT and summary.architecture in ENCODERS:
        return f"it is an encoder ({summary.architecture}), which cannot generate text"
    if role == "rerank" and summary.pooling != "RANK":
        return "its header declares no rank pooling, so it has no head to score a pair with"
    if role == "embed" and summary.pooling == "RANK":
        return "its header declares rank pooling: it scores pairs, one number each, instead of embedding texts"
    return None


def refusal(what: str, role: str, reason: str, note: str | None) -> str:
    """The words of a refusal: ``"x.gguf cannot be the embedding model: <reason> (<note>)"``."""
    return f"{what} cannot be {role_words(role)}: {reason}" + (f" ({note})" if note else "")


def header_refusal(summary: GGUFSummary | None, role: str, what: str) -> str | None:
    """``refusal`` of a local file for ``role`` from its header alone, or None."""
    problem = header_problem(summary, role)
    return None if problem is None else refusal(what, role, problem, header_note(summary, role))
