"""The model roles, declared once: what each is for, what kind of model file runs it, how it is named.

Configuration (``[models.<role>]``), the catalog and its downloads, the header checks, the commands and the page
(through ``GET /api/kinds``) all read this one list, so a role is added here and nowhere else by hand."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    CHAT = "chat"
    SUMMARY = "summary"
    EMBED = "embed"
    RERANK = "rerank"


@dataclass(frozen=True)
class RoleInfo:
    label: str  # as the page heads the role's choice
    what: str  # what the role does, in the page's words
    words: str  # the role's model in a sentence ("the chat model")
    runs: Role  # the kind of model file that serves it: summaries are written by a chat model
    optional: bool = False  # no default model: off unless configured
    same: str | None = None  # the page's choice that reuses another role's model
    off: str | None = None  # the page's choice that turns the role off


ROLES: dict[Role, RoleInfo] = {
    Role.CHAT: RoleInfo("Chat", "replies to you", "the chat model", Role.CHAT),
    Role.SUMMARY: RoleInfo("Summaries", "gists, digests, reflection", "the summary model", Role.CHAT,
                           same="Same as chat"),
    Role.EMBED: RoleInfo("Embeddings", "recall by meaning; a new one re-embeds every memory, with progress",
                         "the embedding model", Role.EMBED),
    Role.RERANK: RoleInfo("Re-ranker", "re-orders what recall found (optional)", "the re-ranker", Role.RERANK,
                          optional=True, off="Off"),
}

# What a model file can be made for (the catalog's roles, and what a header is read as).
FILE_ROLES: tuple[Role, ...] = tuple(role for role, info in ROLES.items() if info.runs is role)
OPTIONAL_ROLES: tuple[Role, ...] = tuple(role for role, info in ROLES.items() if info.optional)
MADE_FOR = {Role.CHAT: "a chat model", Role.EMBED: "an embedding model", Role.RERANK: "a re-ranker"}


def runs(role: str) -> Role:
    """The kind of model file ``role`` needs (a summary needs a chat model)."""
    return ROLES[Role(role)].runs


def role_words(role: str) -> str:
    """The role's model in a sentence; a name that is no role reads as itself."""
    return ROLES[Role(role)].words if role in Role.__members__.values() else f"the {role} model"
