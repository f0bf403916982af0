"""One exception family for everything a user can act on.

Every message says what is wrong and what to do about it. The CLI prints these
without a traceback; the web API returns them as JSON with ``status_code``.
"""

from __future__ import annotations


class LyraError(Exception):
    """Base of all errors meant for the user's eyes."""

    status_code = 500

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class ConfigError(LyraError):
    """The configuration is invalid: a bad value, an unknown key, a missing file."""

    status_code = 500


class ReloadRefused(ConfigError):
    """A reload whose new models failed their checks: the running configuration keeps serving."""

    def __init__(self, message: str, *, reason: str, hint: str | None = None) -> None:
        """``reason``: why, without the message's preamble (for a caller that words its own)."""
        super().__init__(message, hint=hint)
        self.reason = reason


class ModelFileMissing(ConfigError):
    """A local model's GGUF file is not where the config says."""


class ParserUnavailable(ModelFileMissing):
    """The English parsing pipeline is not in models_dir, is not the verified one, or spaCy cannot load it."""


class ModelLoadError(LyraError):
    """llama.cpp could not load a model file."""

    status_code = 503


class ModelUnavailable(LyraError):
    """A model server could not be reached, even after retrying."""

    status_code = 503


class ModelRequestError(LyraError):
    """A model server rejected a request (4xx other than 429): retrying will not help."""

    status_code = 502


class FetchError(LyraError):
    """Fetching or verifying a default model failed."""


class BadRequest(LyraError):
    """A client sent something we cannot act on."""

    status_code = 400


class NotFound(LyraError):
    """The thing a request names does not exist."""

    status_code = 404


class Conflict(LyraError):
    """The request was made against a state that changed meanwhile (reload and try again)."""

    status_code = 409


class StorageError(LyraError):
    """The operating system refused to read or write a file of the memory: the disk must change, not Lyra.

    Made from an ``OSError`` or ``sqlite3.Error`` by ``lyra_local.oserrors.storage_error`` only, so each
    cause is named one way everywhere (the CLI, the API, a chat turn). ``path``: where it happened.
    """

    status_code = 503

    def __init__(self, message: str, *, path: str | None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.path = path


class DiskFull(StorageError):
    """No space (or no inode) left on the disk holding the memory."""

    status_code = 507  # Insufficient Storage


class ReadOnlyStorage(StorageError):
    """The memory is on a read-only file system."""


class StoragePermission(StorageError):
    """This user may not read or write a file or folder of the memory."""


class StorageMissing(StorageError):
    """A folder of the memory does not exist, or a file stands where a folder should be."""
