"""Every command, flag and setting the README and docs/ name is real.

A name in the docs that the code does not have sends a reader to an error. This reads README.md and docs/*.md
the way a reader copies from them and holds each name to the code:

- ``lyra [global options] COMMAND [SUB] [--flag ...]`` in backticks or a shell block: the command is one of
  ``build_parser()``'s, SUB one of its subcommands (or a choice of its first positional: ``lyra world edit``,
  ``lyra memory facts``), and every flag an option of that command or subcommand. A synopsis names its
  alternatives in brackets (``lyra tokens [list|create [NAME]|revoke ID]``): each must exist. In docs/cli.md a
  flag alone in backticks (``--since DATE``) is held to the command its section is named after.
- a setting named ``section.key`` or ``[section.table]`` in backticks, every key of a ``toml`` block, and every
  ``LYRA_*`` variable (``__`` separating the levels) resolves in ``lyra_local.config.Settings``; the few
  ``LYRA_*`` variables that are not settings are the config's own (``NOT_SETTINGS``), docker/compose.yml's, or
  those the Makefile hands the tests (``LYRA_REAL_DATA``).

Then what the pages point at: every link between them (and to a heading) lands, every screenshot they name is
one a browser test takes, and docs/memory.md's table of recall's stages is ``STAGES``.

docs/benchmarks.md and docs/reliability.md are records of past runs, with the flags of their time: their names
are not held to today's parser (their links are).
"""

from __future__ import annotations

import argparse
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel

from lyra_local.cli import build_parser
from lyra_local.config import NOT_SETTINGS, Settings
from lyra_local.memory.stages import stage_names

REPO = Path(__file__).resolve().parent.parent
RECORDS = frozenset({"benchmarks.md", "reliability.md"})  # records of runs, kept as they were
DOCS = [REPO / "README.md", *sorted(p for p in (REPO / "docs").glob("*.md") if p.name not in RECORDS)]
NOT_SETTINGS_HERE = frozenset(  # docker/compose.yml's own variables, and what the Makefile hands the tests
    re.findall(r"\$\{(LYRA_[A-Z0-9_]+)", (REPO / "docker" / "compose.yml").read_text())
    + re.findall(r"\b(LYRA_[A-Z0-9_]+)=", (REPO / "Makefile").read_text()))

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"`([^`]+)`")
HEADING = re.compile(r"^#+ (.*)$", re.M)
LYRA = re.compile(r"(?<![\w/.$-])lyra(?=[ \t])")
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
WORD = re.compile(r"^[a-z][a-z0-9-]*$")
DOTTED = re.compile(r"^\[?([a-z_]+(?:\.[a-z_]+)+)\]?(?:\s*=.*)?$")
TABLE = re.compile(r"^\[([a-z_]+(?:\.[a-z_]+)*)\]$")
ENV = re.compile(r"\bLYRA_[A-Z0-9_]*")
FILE_ENDINGS = frozenset({"py", "md", "toml", "js", "json", "jsonl", "db", "gguf", "txt", "yml", "sh", "tar", "png"})


# --- the parser -------------------------------------------------------------------------------------------------

def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A parser's subcommands by name (none for a leaf)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def first_choices(parser: argparse.ArgumentParser) -> frozenset[str]:
    """The choices of a parser's first positional (``lyra world edit``), if it has any."""
    for action in parser._actions:
        if not action.option_strings and not isinstance(action, argparse._SubParsersAction):
            return frozenset(str(choice) for choice in action.choices or ())
    return frozenset()


def options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {name: action for action in parser._actions for name in action.option_strings}


def alternatives(rest: str) -> list[str]:
    """The words in subcommand position of what follows a command: the first word, or in a synopsis
    (``[list|create [NAME]|revoke ID]``) the first word of each alternative of the leading bracket."""
    rest = rest.strip()
    if not rest.startswith("["):
        first = rest.split(maxsplit=1)[0] if rest else ""
        return [first.split("|")[0]] if first else []
    depth, current, parts = 0, "", []
    for char in rest:
        if char == "[":
            depth += 1
            if depth == 1:
                continue
        elif char == "]":
            depth -= 1
            if depth == 0:
                break
        if char == "|" and depth == 1:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part.split(maxsplit=1)[0] for part in parts if part.split()]


def check_command(line: str, parser: argparse.ArgumentParser | None = None) -> list[str]:
    """What in ``line`` (text from ``lyra `` on) the parser does not have; empty when all of it is real."""
    parser = parser or build_parser()
    line = re.sub(r'"[^"]*"|\'[^\']*\'', " ", line.replace("\\|", "|"))  # quoted values are no flags
    tokens = line.split()[1:]
    glob = options(parser)
    while tokens and tokens[0].startswith("-"):  # lyra --person Sam chat
        name = tokens.pop(0).split("=")[0]
        if name not in glob:
            return [f"no global option {name} in: {line.strip()}"]
        if glob[name].nargs != 0 and "=" not in name and tokens:
            tokens.pop(0)
    if not tokens or not WORD.match(tokens[0]):
        return []  # `lyra`, `lyra COMMAND --help`: a placeholder, nothing to hold
    commands = subcommands(parser)
    command = tokens[0]
    if command not in commands:
        return [f"no command `lyra {command}` in: {line.strip()}"]
    cmd = commands[command]
    rest = line.split(command, 1)[1]
    allowed = dict(options(cmd))
    subs, choices = subcommands(cmd), first_choices(cmd)
    problems = []
    if subs or choices:
        named = [word for word in alternatives(rest) if WORD.match(word)]
        for word in named:
            if word not in subs and word not in choices:
                problems.append(f"no `lyra {command} {word}` in: {line.strip()}")
        for word in (named if subs and any(w in subs for w in named) else list(subs)):
            if word in subs:
                allowed |= options(subs[word])
    for flag in FLAG.findall(rest):
        if flag not in allowed:
            problems.append(f"no option {flag} of `lyra {command}` in: {line.strip()}")
    return problems


def commands_in(text: str) -> Iterator[str]:
    """Each ``lyra ...`` command line in a piece of text, from ``lyra`` to the end of its line (a shell
    comment cut off)."""
    for line in text.splitlines():
        line = re.split(r"\s#\s", line)[0]
        for match in LYRA.finditer(line):
            yield line[match.start():]


# --- the settings -----------------------------------------------------------------------------------------------

def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in get_args(annotation):
        yield from _models_in(arg)


def is_setting(path: tuple[str, ...]) -> bool:
    """Whether ``("models", "chat", "n_ctx")`` names a field of the settings (a table or a key)."""
    level: list[type[BaseModel]] = [Settings]
    for key in path:
        fields = [model.model_fields[key] for model in level if key in model.model_fields]
        if not fields:
            return False
        level = [model for field in fields for model in _models_in(field.annotation)]
    return True


def is_env_name(name: str) -> bool:
    """Whether a ``LYRA_*`` name is a setting (``LYRA_MODELS__CHAT__N_CTX``), or one of the variables that are
    not (``LYRA_CONFIG``, docker/compose.yml's ``LYRA_API_TOKEN``, the Makefile's ``LYRA_REAL_DATA``). A trailing
    ``__`` names a prefix."""
    if name in NOT_SETTINGS or name in NOT_SETTINGS_HERE or name == "LYRA_":
        return True
    path = tuple(part.lower() for part in name.removeprefix("LYRA_").removesuffix("__").split("__"))
    return is_setting(path)


def toml_keys(data: dict[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in data.items():
        yield (*prefix, key)
        if isinstance(value, dict):
            yield from toml_keys(value, (*prefix, key))


def setting_in_span(span: str) -> tuple[str, ...] | None:
    """The settings path a backticked span names (``dream.threshold``, ``[models.chat.retry]``,
    ``coordination.world_updates = "propose"``), or None when it names none."""
    span = span.strip()
    match = DOTTED.match(span) or TABLE.match(span)
    if not match:
        return None
    path = tuple(match.group(1).split("."))
    if path[0] not in Settings.model_fields or path[-1] in FILE_ENDINGS:  # `server.py` is a file
        return None
    return path


# --- reading the docs -------------------------------------------------------------------------------------------

def problems_in(text: str, cli_page: bool = False) -> list[str]:
    """Every name in a Markdown text that the parser or the settings do not have."""
    parser = build_parser()
    problems: list[str] = []
    prose = FENCE.sub("", text)
    for lang, block in FENCE.findall(text):
        if lang in ("", "sh", "bash", "console", "shell"):
            for line in commands_in(block):
                problems += check_command(line, parser)
        if lang == "toml":
            problems += [f"no setting {'.'.join(path)} (toml block)"
                         for path in toml_keys(tomllib.loads(block)) if not is_setting(path)]
        problems += [f"no setting {name}" for name in ENV.findall(block) if not is_env_name(name)]
    section_commands: list[str] = []
    for part in re.split(r"(?m)^(?=#+ )", prose):
        heading = HEADING.match(part)
        if heading:
            section_commands = re.findall(r"lyra ((?:models )?[a-z-]+)", heading.group(1))
        for span in INLINE.findall(part):
            span = " ".join(span.split())
            for line in commands_in(span):
                problems += check_command(line, parser)
            path = setting_in_span(span)
            if path is not None and not is_setting(path):
                problems.append(f"no setting {'.'.join(path)}")
            problems += [f"no setting {name}" for name in ENV.findall(span) if not is_env_name(name)]
            if cli_page and section_commands and span.startswith("-") and not LYRA.search(span):
                if span.split()[0] not in options(parser) and all(  # a global option (`--person`) or the section's
                        check_command(f"lyra {cmd} {span}", parser) for cmd in section_commands):
                    problems.append(f"no option {span.split()[0]} of `lyra {' / '.join(section_commands)}`")
    return problems


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_name_in_the_docs_is_real(doc: Path) -> None:
    problems = problems_in(doc.read_text(encoding="utf-8"), cli_page=doc.name == "cli.md")
    assert not problems, f"{doc.relative_to(REPO)} names what does not exist:\n" + "\n".join(problems)


def test_the_docs_name_commands_and_settings_at_all() -> None:
    """The scan finds what it is meant to hold: a reader's commands and settings are in these pages."""
    text = "\n".join(doc.read_text(encoding="utf-8") for doc in DOCS)
    spans = [" ".join(s.split()) for s in INLINE.findall(FENCE.sub("", text))]
    lines = [line for s in spans for line in commands_in(s)]
    assert len(lines) > 60 and any(line.startswith("lyra models pull") for line in lines)
    assert sum(setting_in_span(s) is not None for s in spans) > 20
    assert "```toml" in text


# --- the checker catches a made-up name -------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "lyra serve --host H --port P",
    "lyra --person Sam chat",
    "lyra --config PATH doctor --config",
    "lyra world [show|edit|history|proposals|accept ID|reject ID|set FILE]",
    "lyra tokens [list|create [NAME]|revoke ID]",
    "lyra people [list|add NAME [--child]|reset NAME|remove NAME [--yes]|passwd]",
    "lyra models pull NAME|OWNER/REPO:FILE.gguf[@REV]",
    "lyra forget --matching \"bank PIN\" --dry-run",
    "lyra recall QUERY [--k N] [--tier exchange\\|gist\\|digest]",
    "lyra COMMAND --help",
])
def test_real_commands_pass(line: str) -> None:
    assert check_command(line) == []


@pytest.mark.parametrize("line", [
    "lyra summon",
    "lyra models levitate NAME",
    "lyra world erase",
    "lyra tokens [list|mint NAME]",
    "lyra recall QUERY --telepathy",
    "lyra people add Sam --yes",  # --yes is remove's, not add's
    "lyra --persona Sam chat",
])
def test_a_made_up_command_or_flag_is_caught(line: str) -> None:
    assert check_command(line) != []


def test_real_settings_pass() -> None:
    for path in (("dream", "threshold"), ("models", "chat", "n_ctx"), ("models", "chat", "base_url"),
                 ("models", "summary", "same_as"), ("models", "rerank", "path"), ("dream", "retry", "max_delay_s"),
                 ("server", "allowed_hosts"), ("data_dir",)):
        assert is_setting(path), path
    for name in ("LYRA_MODELS__CHAT__N_CTX", "LYRA_SERVER__API_TOKEN", "LYRA_DATA_DIR", "LYRA_CONFIG",
                 "LYRA_MODELS__", "LYRA_API_TOKEN", "LYRA_REAL_DATA"):
        assert is_env_name(name), name


def test_a_made_up_setting_is_caught() -> None:
    assert not is_setting(("dream", "nightmares"))
    assert not is_setting(("models", "chat", "n_ctx", "deeper"))
    assert not is_setting(("models", "oracle"))
    assert not is_env_name("LYRA_DREAM__NIGHTMARES")
    assert not is_env_name("LYRA_SERVER_HOST")  # one underscore: not a level
    assert problems_in("Set `dream.nightmares` to 3.") != []
    assert problems_in("```toml\n[server]\nportal = 1\n```\n") != []
    assert problems_in("```sh\nLYRA_COMPANION__MOOD=1 lyra serve\n```\n") != []
    assert problems_in("## lyra recall\n\n`--telepathy` finds more.\n", cli_page=True) != []
    assert problems_in("`lyra summon` and `lyra recall --since DATE`") == ["no command `lyra summon` in: lyra summon"]



# --- links between the pages ------------------------------------------------------------------------------------

def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("doc", [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_between_the_pages_lands(doc: Path) -> None:
    """A link to a page, or to a heading of one (``memory.md#forgetting``), finds it: a page moved or a heading
    renamed breaks no link."""
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", FENCE.sub("", doc.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue  # http://…, mailto:
        path, _, anchor = target.partition("#")
        page = (doc.parent / path).resolve() if path else doc
        if not page.exists():
            broken.append(target)
        elif anchor and page.suffix == ".md" and anchor not in {
                slug(h) for h in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8")))}:
            broken.append(target)
    assert not broken, f"{doc.relative_to(REPO)} links to what is not there: {broken}"


def test_slugs_are_githubs() -> None:
    assert slug("Settings → Models") == "settings--models"
    assert slug("Proving the image: `make docker-check`") == "proving-the-image-make-docker-check"
    assert slug("lyra.toml") == "lyratoml"


# --- screenshots ------------------------------------------------------------------------------------------------

def screenshot_names() -> list[re.Pattern[str]]:
    """The screenshots the tests write into test-output/screenshots/ (``shot(page, "chat")``,
    ``shot(page, f"phone-{tab}")``), as patterns of file names."""
    written = []
    for test in (REPO / "tests").glob("*.py"):
        for name in re.findall(r'shot\(\w+, f?"([^"]+)"\)|SHOTS / "([^"]+)\.png"', test.read_text(encoding="utf-8")):
            stem = "".join(name)
            written.append(re.compile(re.sub(r"\\\{[^}]*\\\}", ".+", re.escape(stem)) + r"\.png"))
    return written


def test_every_screenshot_the_docs_name_is_taken_by_a_test() -> None:
    """docs/using.md points at the browser tests' screenshots by name: each is one a test writes."""
    written = screenshot_names()
    named = {name for doc in DOCS for name in re.findall(r"`([\w-]+\.png)`", doc.read_text(encoding="utf-8"))}
    assert len(named) > 10
    assert not [name for name in named if not any(p.fullmatch(name) for p in written)]
    assert not any(p.fullmatch("a-view-nobody-shot.png") for p in written)


def test_the_recall_stages_in_the_docs_are_recalls() -> None:
    """docs/memory.md's table of recall's stages names each stage of ``STAGES`` once, in its order, and no other."""
    text = (REPO / "docs" / "memory.md").read_text(encoding="utf-8")
    table = text[text.index("| stage | what it adds |"):].split("\n\n")[0]
    assert re.findall(r"^\| `(\w+)` \|", table, re.M) == stage_names()
