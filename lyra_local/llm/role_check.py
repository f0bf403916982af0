"""Whether a model can do its role's work, found by having it do that work once, before it serves.

A file that loads is not yet a model for its role. A chat GGUF loads as an
embedder, then returns one vector per token (or none) for a batch; an embedding
GGUF loads as a chat model and has nothing to generate with. So whoever is about
to put a model to work (Settings → Models' Apply, a reload, `lyra doctor`, the
commands that embed) first asks it for the smallest real piece of its role:

- an embedder embeds two different texts to exactly two finite, non-zero,
  distinct vectors of the dimension it reports (any dimension: a new one only
  means re-embedding the memory);
- a chat or summary model generates at least one token through its chat template;
- a re-ranker returns one finite score for each of two pairs.

A model that fails is refused with ``WrongModelForRole``, in words a person
acts on, and, for a local file, what its header says it is made for. What
cannot be the model's fault (a server that does not answer, a file missing)
passes through as its own error. Some local files are refused from their
header alone, before llama.cpp runs them (``modelfiles/roles.py`` says which
and why). This module writes nothing and swaps nothing: its callers decide
what a refusal leaves as it was.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import LyraError, ModelRequestError
from ..modelfiles.gguf_header import GGUFSummary
from ..modelfiles.roles import ROLE_HINT, header_note, header_problem, refusal
from .base import ChatModel, Embedder, GenerationOptions, Message, Reranker
from .local import PerTokenVectors

PROBE_TEXTS = ("The cat slept on the warm windowsill all afternoon.",
               "Quarterly revenue grew by twelve percent in March.")
PROBE_QUERY = "Where did the cat sleep?"
PROBE_CHAT: list[Message] = [{"role": "user", "content": "Say hello."}]
PROBE_OPTIONS = GenerationOptions(max_tokens=2, temperature=0.0, seed=0)


class WrongModelForRole(LyraError):
    """A model that loads but cannot do its role's work (the chat GGUF chosen to embed): refused, never served."""

    status_code = 400

    def __init__(self, what: str, role: str, reason: str, *, note: str | None = None) -> None:
        """``what``: the file or server, as a person knows it; ``reason``: what it did wrong; ``note``: what its
        header says it is, when that explains the failure."""
        super().__init__(refusal(what, role, reason, note), hint=ROLE_HINT)
        self.role = role
        self.reason = reason


def vector_problem(vectors: object, count: int, dim: int) -> str | None:
    """Why ``vectors`` are not ``count`` finite, non-zero rows of ``dim`` floats (the model's own dimension), or
    None when they are. Pure: the role check and every re-embedding batch ask it."""
    array = np.asarray(vectors) if not isinstance(vectors, np.ndarray) else vectors
    texts = f"{count} text{'s' if count != 1 else ''}"
    if array.ndim == 3 or (array.dtype == object and array.size):
        return f"it returned one vector per token instead of one per text for a batch of {texts}"
    if array.ndim != 2 or array.shape[0] == 0:
        return f"it returned no vector for a batch of {texts}"
    if array.shape[0] != count:
        return f"it returned {array.shape[0]} vectors for a batch of {texts}"
    if array.shape[1] != dim:
        return f"it returned vectors of {array.shape[1]} numbers but says its vectors have {dim}"
    if not np.issubdtype(array.dtype, np.number) or not np.all(np.isfinite(array)):
        return f"its vectors for a batch of {texts} hold values that are not numbers (NaN or infinite)"
    if np.any(np.linalg.norm(array.astype(np.float64), axis=1) < 1e-6):
        return f"it returned an all-zero vector for a batch of {texts}"
    return None


def embed_problem(model: Embedder) -> str | None:
    """What is wrong with ``model`` as an embedder, or None. Errors not of the model's making propagate."""
    try:
        vectors = model.embed(list(PROBE_TEXTS))
        dim = model.dim
    except PerTokenVectors:
        return "it returned no vector for a batch of two texts, only one per token"
    except ModelRequestError as exc:  # the backend refused the request: this model does not embed
        return f"it could not embed a batch of two texts: {exc.message}"
    except (ValueError, RuntimeError) as exc:  # llama.cpp's own refusal, in-process
        return f"it could not embed a batch of two texts: {exc}"
    problem = vector_problem(vectors, len(PROBE_TEXTS), dim)
    if problem is None and float(np.max(np.abs(vectors[0] - vectors[1]))) < 1e-6:
        problem = "it returned the same vector for two different texts"
    return problem


def chat_problem(model: ChatModel) -> str | None:
    """What is wrong with ``model`` as a chat (or summary) model, or None."""
    try:
        completion = model.complete(PROBE_CHAT, PROBE_OPTIONS)
    except ModelRequestError as exc:
        return f"it could not answer a message through its chat template: {exc.message}"
    except (ValueError, RuntimeError, AssertionError) as exc:  # llama-cpp-python asserts on a model it cannot run
        return f"it could not answer a message through its chat template: {exc or type(exc).__name__}"
    if completion.completion_tokens < 1 and not completion.text:
        return "it generated no token in answer to a message"
    return None


def rerank_problem(model: Reranker) -> str | None:
    """What is wrong with ``model`` as a re-ranker, or None."""
    try:
        scores = model.rerank(PROBE_QUERY, list(PROBE_TEXTS))
    except ModelRequestError as exc:
        return f"it could not score two pairs: {exc.message}"
    except (ValueError, RuntimeError, IndexError) as exc:
        return f"it could not score two pairs: {exc}"
    if len(scores) != len(PROBE_TEXTS):
        return f"it returned {len(scores)} scores for two pairs"
    if not all(isinstance(s, (int, float)) and math.isfinite(s) for s in scores):
        return f"its scores for two pairs are not all numbers: {list(scores)}"
    return None


def problem_for(model: object, role: str) -> str | None:
    """The role's check on ``model`` (chat, summary, embed or rerank)."""
    if role == "embed":
        return embed_problem(model)  # type: ignore[arg-type]
    if role == "rerank":
        return rerank_problem(model)  # type: ignore[arg-type]
    return chat_problem(model)  # type: ignore[arg-type]


def check_role(model: object, role: str, what: str, summary: GGUFSummary | None = None) -> None:
    """Refuse ``model`` for ``role`` (``WrongModelForRole``) unless it does that role's work once.

    ``summary``: the local file's header, which words the refusal (``refuse_by_header`` runs first, before the
    file is loaded)."""
    problem = problem_for(model, role)
    if problem is not None:
        raise WrongModelForRole(what, role, problem, note=header_note(summary, role))


def refuse_by_header(summary: GGUFSummary | None, role: str, what: str) -> None:
    """``WrongModelForRole`` if a local file's header alone shows it cannot serve ``role``."""
    problem = header_problem(summary, role)
    if problem is not None:
        raise WrongModelForRole(what, role, problem, note=header_note(summary, role))
