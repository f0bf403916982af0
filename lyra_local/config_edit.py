"""Settings → Models: a choice of model per role, written into ``lyra.toml`` the way a person would edit it.

``edit_models(text, choices)`` is pure: the file's text (or None when there is
none yet) and the choices in, the new text out. The person's comments, order
and other keys stay; only the chosen roles' tables change. Changing a role's
backend replaces its table, so no key of the old backend is left behind to
fail validation (``base_url`` under a local model); keeping the backend keeps
the table's other keys (``n_threads``, ``[sampling]``).

tomlkit keeps the layout but can misplace keys in shapes it edits badly
(dotted keys, a role's tables scattered through the file), so what it writes is
read back with ``tomllib`` and compared with the intended settings; when they
differ, the ``[models]`` part is written anew, and if even that reads wrong
nothing is written at all.

A local choice names a file in ``models_dir`` by its NAME only: this module
never takes a path from a request, and refuses any name that could step out of
that folder. It writes no file (``web/model_choice.py`` does).
"""

from __future__ import annotations

import tomllib
from abc import abstractmethod
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import tomlkit
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import InlineTable, Table

from .config import LocalModel, SameAs, ServerModel, Settings, backend_tag, env_locations, server_url
from .errors import BadRequest, ConfigError

NEW_FILE_HEADER = ("# Lyra's configuration: docs/configuration.md says what each key does.\n"
                   "# Settings -> Models edits the [models.*] tables; your comments and other keys are kept.\n\n")


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class _Choice(_Request):
    """One kind of choice for a role; each kind says what it writes and when the settings hold it, so nothing
    asks which kind a choice is."""

    def check(self, role: str) -> None:
        """``BadRequest`` for a value no config may hold (a file name, a URL); most kinds have none."""

    def absent_from(self, models_dir: Path) -> str | None:
        """The file this choice names that ``models_dir`` does not hold, or None (most kinds name none)."""
        return None

    @abstractmethod
    def table(self, current: Any) -> dict[str, Any] | None:
        """The role's new table, ``current`` being its table now; None: the role's table goes."""

    @abstractmethod
    def holds(self, spec: LocalModel | ServerModel | SameAs | None) -> bool:
        """Whether ``spec`` (the role's settings read back) is what was chosen."""


def _kept(current: Any, keys: dict[str, Any]) -> dict[str, Any]:
    """``current`` updated with ``keys`` when its backend stays (its other keys kept), else ``keys`` alone."""
    if isinstance(current, dict) and backend_tag(current) == keys["backend"]:
        return {**current, **{key: value for key, value in keys.items() if key != "backend"}}
    return keys


class LocalChoice(_Choice):
    """A GGUF file in models_dir, by name, run in-process. Bounds are checked where every config is: loading it."""

    file: str = Field(max_length=255, description="A file name listed by GET /api/models/files.")
    n_ctx: int | None = Field(None, description="Context length in tokens; default: the role's current or default.")
    n_gpu_layers: int | Literal["auto"] | None = Field(
        None, description='Layers offloaded to the GPU (-1 all, 0 none, "auto" as many as fit); default: as now.')

    def check(self, role: str) -> None:
        check_file_name(self.file)

    def absent_from(self, models_dir: Path) -> str | None:
        return None if (models_dir / self.file).is_file() else self.file

    def table(self, current: Any) -> dict[str, Any]:
        keys: dict[str, Any] = {"backend": "local", "path": self.file}
        keys.update({k: v for k, v in (("n_ctx", self.n_ctx), ("n_gpu_layers", self.n_gpu_layers)) if v is not None})
        return _kept(current, keys)

    def holds(self, spec: LocalModel | ServerModel | SameAs | None) -> bool:
        return (isinstance(spec, LocalModel) and spec.path == Path(self.file)
                and self.n_ctx in (None, spec.n_ctx) and self.n_gpu_layers in (None, spec.n_gpu_layers))


class ServerChoice(_Choice):
    """A model behind an OpenAI-compatible server (llama.cpp's llama-server)."""

    base_url: str = Field(max_length=2000, description="http(s):// root of the server, no /v1.")
    model: str = Field(min_length=1, max_length=200, description="The model name sent in requests.")

    def check(self, role: str) -> None:
        try:
            server_url(self.base_url)
        except ValueError as exc:
            raise BadRequest(f"models.{role}.base_url {self.base_url!r} {exc}",
                             hint="e.g. http://gpu-box:8080, llama.cpp's llama-server") from exc

    def table(self, current: Any) -> dict[str, Any]:
        return _kept(current, {"backend": "server", "base_url": server_url(self.base_url), "model": self.model})

    def holds(self, spec: LocalModel | ServerModel | SameAs | None) -> bool:
        return isinstance(spec, ServerModel) and (spec.base_url, spec.model) == (server_url(self.base_url),
                                                                                 self.model)


class SameAsChat(_Choice):
    """The summary role on chat's model: one loaded instance serves both."""

    same_as: Literal["chat"]

    def table(self, current: Any) -> dict[str, Any]:
        return {"same_as": "chat"}

    def holds(self, spec: LocalModel | ServerModel | SameAs | None) -> bool:
        return isinstance(spec, SameAs)


class Off(_Choice):
    """No re-ranker: the role's table is removed."""

    off: Literal[True]

    def table(self, current: Any) -> None:
        return None

    def holds(self, spec: LocalModel | ServerModel | SameAs | None) -> bool:
        return spec is None


def _choice_tag(value: Any) -> str | None:
    """Which kind of choice a JSON object is, by the one key that says so."""
    if isinstance(value, _Choice):
        return {LocalChoice: "local", ServerChoice: "server", SameAsChat: "same_as", Off: "off"}[type(value)]
    if isinstance(value, Mapping):
        for key, tag in (("file", "local"), ("base_url", "server"), ("same_as", "same_as"), ("off", "off")):
            if key in value:
                return tag
    return None


_WHICH = Discriminator(_choice_tag, custom_error_type="unknown_choice",
                       custom_error_message="give {'file': ...} (a GGUF in models_dir) or {'base_url': ..., "
                                            "'model': ...} (a model server); summary may be {'same_as': 'chat'}, "
                                            "rerank {'off': true}")
ModelChoice = Annotated[Union[Annotated[LocalChoice, Tag("local")], Annotated[ServerChoice, Tag("server")]], _WHICH]
SummaryChoice = Annotated[Union[Annotated[LocalChoice, Tag("local")], Annotated[ServerChoice, Tag("server")],
                                Annotated[SameAsChat, Tag("same_as")]], _WHICH]
RerankChoice = Annotated[Union[Annotated[LocalChoice, Tag("local")], Annotated[ServerChoice, Tag("server")],
                               Annotated[Off, Tag("off")]], _WHICH]
AnyChoice = LocalChoice | ServerChoice | SameAsChat | Off


class ModelChoices(_Request):
    """A choice for some roles; a role left out keeps what it has."""

    chat: ModelChoice | None = None
    summary: SummaryChoice | None = None
    embed: ModelChoice | None = None
    rerank: RerankChoice | None = None

    def given(self) -> Iterator[tuple[str, AnyChoice]]:
        """(role, choice) for each role chosen, in the settings' order."""
        for role in ("chat", "summary", "embed", "rerank"):
            choice: AnyChoice | None = getattr(self, role)
            if choice is not None:
                yield role, choice


def check_choices(choices: ModelChoices) -> None:
    """``BadRequest`` for a file that is not a plain GGUF name or a server URL that is not http(s)."""
    for role, choice in choices.given():
        choice.check(role)


def check_file_name(name: str) -> None:
    """Refuse anything but a plain ``*.gguf`` name: no folder, no step up, no hidden file, no control character."""
    if not name:
        raise BadRequest("no file name given", hint="GET /api/models/files lists the files in models_dir")
    if "/" in name or "\\" in name:
        raise BadRequest(f"{name!r} is a path: give a file name from models_dir",
                         hint="GET /api/models/files lists the files there")
    if name.startswith(".") or any(ord(c) < 32 for c in name):  # ".", "..", hidden; "a..b.gguf" is a name
        raise BadRequest(f"{name!r} is not a model file name", hint="GET /api/models/files lists the files there")
    if not name.endswith(".gguf"):
        raise BadRequest(f"{name!r} is not a GGUF file (its name must end in .gguf)",
                         hint="GET /api/models/files lists the files there")


def edit_models(text: str | None, choices: ModelChoices) -> str:
    """``text`` (a lyra.toml's contents, None for a new file) with ``choices`` applied; everything else kept.

    ``BadRequest`` for a choice no config may hold (``check_choices``); ``ConfigError`` when the text is not
    TOML or cannot be edited without changing something else."""
    check_choices(choices)
    try:
        before = tomllib.loads(text or "")
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"lyra.toml is not valid TOML, so it cannot be edited: {exc}",
                          hint="fix the syntax at that line, then choose again") from exc
    if not isinstance(before.get("models", {}), dict):
        raise ConfigError("'models' in lyra.toml is not a table", hint="make it [models.chat] and so on")
    expected = chosen(before, choices)
    for write in (_edit_in_place, _rewrite_models):
        try:
            doc = tomlkit.parse(NEW_FILE_HEADER if text is None else text)
            write(doc, before.get("models", {}), expected.get("models", {}), choices)
            out = tomlkit.dumps(doc).rstrip("\n") + "\n"  # a table added last brings a blank line of its own
            if tomllib.loads(out) == expected:
                return out
        except (TOMLKitError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError, AttributeError):
            continue  # the next way, or the refusal below: nothing half-edited is ever returned
    raise ConfigError("lyra.toml's [models] part is laid out in a way this editor cannot change safely",
                      hint="edit the [models.*] tables by hand (docs/configuration.md), "
                           "or move them into plain [models.ROLE] tables and choose again")


def chosen(data: dict[str, Any], choices: ModelChoices) -> dict[str, Any]:
    """The settings ``data`` (parsed lyra.toml) become with ``choices``: what the written text must read as."""
    models = dict(data.get("models", {}))
    for role, choice in choices.given():
        table = choice.table(models.get(role))
        if table is None:
            models.pop(role, None)
        else:
            models[role] = table
    out = dict(data)
    out.pop("models", None)
    return {**out, "models": models} if models else out


def _edit_in_place(doc: tomlkit.TOMLDocument, before: dict[str, Any], after: dict[str, Any],
                   choices: ModelChoices) -> None:
    """Change each chosen role's table where it stands: its header comment and position stay."""
    if "models" not in doc:
        if not after:
            return
        doc.add("models", tomlkit.table(is_super_table=True))
    models: Any = doc["models"]
    for role, _ in choices.given():
        _edit_role(models, role, before.get(role), after.get(role))


def _edit_role(models: Any, role: str, prior: Any, wanted: dict[str, Any] | None) -> None:
    """One role's table: dropped, its changed keys set (same backend), emptied and refilled where it stands
    (another backend), or written anew."""
    present = role in models
    if wanted is None:
        if present:
            del models[role]
    elif present and isinstance(prior, dict) and backend_tag(prior) == backend_tag(wanted):
        table = models[role]
        for key, value in wanted.items():
            if not isinstance(value, dict) and prior.get(key) != value:
                table[key] = value  # tomlkit keeps the comment after the old value
    elif present and isinstance(prior, dict) and isinstance(models[role], (Table, InlineTable)):
        table = models[role]  # another backend: emptied where it stands, so none of the old keys stays
        for key in list(table.keys()):
            del table[key]
        for key, value in wanted.items():
            table[key] = value
        if isinstance(table, Table):
            table.add(tomlkit.nl())
    else:
        if present:
            del models[role]
        models.add(role, _table(wanted))


def _rewrite_models(doc: tomlkit.TOMLDocument, before: dict[str, Any], after: dict[str, Any],
                    choices: ModelChoices) -> None:
    """Every ``[models.*]`` table written anew at the end (the comments inside them go; all else stays)."""
    if "models" in doc:
        del doc["models"]
    if after:
        models = tomlkit.table(is_super_table=True)
        for role, table in after.items():
            models.add(role, _table(table))
        doc.add("models", models)


def _table(data: dict[str, Any]) -> Table:
    """A ``[models.ROLE]`` table (sub-tables as ``[models.ROLE.NAME]``), with a blank line after it."""
    table = tomlkit.table()
    for key, value in data.items():
        if not isinstance(value, dict):
            table.add(key, value)
    for key, value in data.items():
        if isinstance(value, dict):
            table.add(key, _table(value))
    table.add(tomlkit.nl())
    return table


def env_overrides(choices: ModelChoices, candidate: Settings, env: Mapping[str, str]) -> list[str]:
    """The ``LYRA_MODELS__…`` variables that make ``candidate`` (the settings read back with the environment)
    differ from what was chosen; empty when every choice holds."""
    names: list[str] = []
    for role, choice in choices.given():
        if choice.holds(getattr(candidate.models, role)):
            continue
        under = [name for loc, name in env_locations(env).items() if loc[:2] == ("models", role)]
        names.extend(under or [f"(something other than lyra.toml sets models.{role})"])
    return names
