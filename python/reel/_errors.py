"""Exceptions raised by reel. Every one subclasses :class:`Error` and the
natural Python built-in, so ``except FileNotFoundError`` works as expected."""


class Error(Exception):
    """Base class of every reel error."""


class NotFoundError(Error, FileNotFoundError):
    """A file, episode or column that must exist does not."""


class InvalidError(Error, ValueError):
    """Input violates the contract (bad value, bad type, bad JSON)."""


class CorruptionError(Error, ValueError):
    """A file exists but cannot be decoded (truncated parquet, ...)."""


class PermissionDeniedError(Error, PermissionError):
    """The operating system refused access."""


class IOError(Error, OSError):  # noqa: A001 - mirrors reel::StatusCode::kIOError
    """The operating system refused an operation."""


class NotSupportedError(Error, ValueError):
    """A known but unsupported format or feature (e.g. an unknown `format` value)."""


class AlreadyExistsError(Error, FileExistsError):
    """A write would replace something it must not."""
