"""The quantiser's exceptions; each carries the ``vta`` command's exit code as an integer
``exit_code`` (Relay stands alone, so the codes of isa/errors.py are restated here)."""
from __future__ import annotations

__all__ = ["QuantizeError", "DoesNotQuantize"]


class QuantizeError(Exception):
    """Calibration data or options that do not fit the model."""

    exit_code = 2   # the `vta` command's code for bad usage or input


class DoesNotQuantize(QuantizeError):
    """A model whose integer form does not fit int32 arithmetic (a bias too large for its
    layer's accumulator scale); the message names the layer and how to keep it in float."""

    exit_code = 1   # the `vta` command's code for a rejected model
