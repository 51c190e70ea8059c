"""The compiler's exceptions; each carries the ``vta`` command's exit code (isa.errors)."""

from __future__ import annotations

from isa.errors import InputError, RejectedError

__all__ = ["CompileError", "UnsupportedOperator", "DoesNotFit", "BinaryError"]


class CompileError(RejectedError):
    """A program the compiler rejects (exit code 1); the message says what and why."""


class UnsupportedOperator(CompileError):
    """An operator or attribute that neither VTA nor the CPU path can compute."""


class DoesNotFit(CompileError):
    """A workload whose smallest tile does not fit an on-chip buffer; the message names it."""


class BinaryError(InputError):
    """A ``.vtab`` file that cannot be used: another version or configuration, or corrupted."""
