"""Error types shared by every stage, so callers can tell bad input from bugs."""

from __future__ import annotations


class CitegateError(Exception):
    """Base class for errors citegate raises on purpose."""


class InputError(CitegateError):
    """Bad input data: names the file and the record so the user can fix it."""

    def __init__(self, path: object, record: object, message: str) -> None:
        self.path = str(path)
        self.record = record
        self.message = message
        super().__init__(f"{self.path}: record {record}: {message}")


class ConfigError(CitegateError):
    """An invalid configuration value or key."""
