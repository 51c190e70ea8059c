"""The compiler's exceptions; the CLI maps each to an exit code."""

from __future__ import annotations

__all__ = ["CompileError", "UnsupportedOperator", "DoesNotFit", "BinaryError"]


class CompileError(Exception):
    """A program the compiler rejects (exit code 1); the message says what and why."""


class UnsupportedOperator(CompileError):
    """An operator or attribute that neither VTA nor the CPU path can compute."""


class DoesNotFit(CompileError):
    """A workload whose smallest tile does not fit an on-chip buffer; the message names it."""


class BinaryError(ValueError):
    """A ``.vtab`` file that cannot be used: another version or configuration, or corrupted."""
