"""The two errors a user's mistake raises; each is one line for the command to print (exit status 2).

Standard library only, so the command line and the option declarations load it without numpy.
"""

from __future__ import annotations

__all__ = ["AssessError", "OptionError"]


class AssessError(ValueError):
    """A problem with the user's input or options, worded for them (the file and line, or the option)."""


class OptionError(AssessError):
    """A bad option: ``option`` (its Python name) and ``text`` (what was wrong and what was expected)."""

    def __init__(self, option: str, text: str) -> None:
        self.option, self.text = option, text
        super().__init__(f"{option}: {text}")
