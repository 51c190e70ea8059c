"""Conformance suite: generated VTA programs with independently computed expectations.

* :func:`conformance_programs` — the suite for one configuration (every memory type, padding,
  strides, narrowing, GEMM loops/reset/extremes/back-to-back, every ALU op, blocked GEMM with
  one and two virtual threads, a padded convolution, token patterns, and programs that must be
  rejected with a given :class:`~isa.errors.ErrorCode` at a given instruction);
* :func:`random_program` — random valid, race-free, token-balanced programs for differential
  testing between backends;
* ``tags`` name what a program covers; ``div-*`` tags mark features where the original
  implementations diverge (reference §5.8; see :func:`analysis.divergence_tags`);
* :class:`ProgramBuilder` and the tile helpers in :mod:`isa.conformance.tiles` — for writing
  such programs by hand.

Expected results are computed with numpy from what each program means (e.g. ``A @ W.T + bias``
narrowed), never by running a simulator.
"""

from __future__ import annotations

from .builder import MODULES, ProgramBuilder, Region, elem_bytes
from .program import ConformanceProgram
from .random_gen import random_program
from .tiles import acc_tiles, alu_ref, bytes_of_acc, inp_tiles, narrow, tile, untile, wgt_tiles

__all__ = ["ConformanceProgram", "conformance_programs", "random_program", "ProgramBuilder",
           "Region", "MODULES", "elem_bytes", "tile", "untile", "inp_tiles", "wgt_tiles",
           "acc_tiles", "narrow", "alu_ref", "bytes_of_acc", "FAMILIES"]

FAMILIES = ("memory", "gemm", "alu", "tokens", "bad")


def conformance_programs(cfg, *, seed: int = 0, families=FAMILIES) -> list[ConformanceProgram]:
    """Every conformance program for configuration ``cfg`` (a VTAConfig or a shipped name),
    deterministic for ``seed``. Names are unique."""
    from ..config import load_config
    from . import family_alu, family_bad, family_gemm, family_memory, family_tokens
    from .analysis import divergence_tags
    cfg = load_config(cfg)
    makers = {"memory": family_memory.programs, "gemm": family_gemm.programs,
              "alu": family_alu.programs, "tokens": family_tokens.programs,
              "bad": family_bad.programs}
    progs = []
    for fam in families:
        progs += makers[fam](cfg, seed)
    for p in progs:
        if not p.is_bad:
            p.tags = tuple(p.tags) + divergence_tags(p.image)
    names = [p.name for p in progs]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, f"duplicate program names: {sorted(dup)}"
    return progs
