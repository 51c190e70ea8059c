"""The exceptions of the bitstream flow (the CLI maps them to exit codes)."""

from __future__ import annotations

__all__ = ["BitstreamError", "FitError", "ToolError", "UsageError"]


class BitstreamError(Exception):
    """Something the bitstream flow cannot do; the message says what and what to do."""


class FitError(BitstreamError):
    """The design does not fit the device: names the resource and the overflow."""


class ToolError(BitstreamError):
    """A tool is missing or failed; the message names it and the log to read."""


class UsageError(BitstreamError):
    """A bad board name, configuration or file."""
