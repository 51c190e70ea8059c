"""Helpers shared by the program families: seeded data and the standard observation patterns."""

from __future__ import annotations

import zlib

import numpy as np

from ..encoding import MemType, Uop
from .builder import ProgramBuilder
from .tiles import bytes_of_acc, narrow

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def rng_for(seed: int, name: str) -> np.random.Generator:
    """A generator that depends only on the suite seed and the program name."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def rand_i8(rng, shape, lo=-128, hi=127) -> np.ndarray:
    return rng.integers(lo, hi + 1, size=shape).astype(np.int8)


def rand_i32(rng, shape, extremes: float = 0.2) -> np.ndarray:
    """Full-range int32 values with a share of boundary values mixed in."""
    vals = rng.integers(INT32_MIN, INT32_MAX + 1, size=shape, dtype=np.int64)
    special = np.array([INT32_MIN, INT32_MIN + 1, -129, -128, -1, 0, 1, 127, 128, 255, 256,
                        INT32_MAX - 1, INT32_MAX], np.int64)
    mask = rng.random(shape) < extremes
    vals[mask] = rng.choice(special, size=int(mask.sum()))
    return vals.astype(np.int32)


def store_out(b: ProgramBuilder, sram: int, n: int, name: str):
    """Make compute's results visible to store (g2s), then STORE ``n`` ACC entries from
    ``sram`` into a new output region ``name`` of shape (n, BATCH, BLOCK_OUT)."""
    out = b.output(name, (n,))
    b.sync("compute", "store")
    b.store(sram, out, n)
    return out


def readback32(b: ProgramBuilder, sram: int, n: int, name: str, *, uop_slot: int | None = None):
    """Read back ``n`` whole int32 accumulators starting at ``sram``: four STOREs of the low
    byte with ``SHR 8`` in between, into an output of shape (4, n, BATCH, BLOCK_OUT) whose
    plane k holds byte k (compare with :func:`tiles.bytes_of_acc`). Uses micro-op
    ``uop_slot`` (default: the last entry of the micro-op buffer). Leaves ACC shifted."""
    cfg = b.cfg
    slot = cfg.uop_depth - 1 if uop_slot is None else uop_slot
    u = b.put_uops([Uop(sram, sram, 0)], name=f"{name}_uop")
    out = b.output(name, (4, n))
    b.load(MemType.UOP, slot, u, 1)
    b.sync("compute", "store")
    b.store(sram, out, n)
    for k in range(1, 4):
        b.sync("store", "compute")
        b.alu("SHR", slot, slot + 1, (1, n), dst=(0, 1), src=(0, 1), imm=8)
        b.sync("compute", "store")
        b.store(sram, out, n, offset=k * n)
    return out


def expect32(acc) -> np.ndarray:
    return bytes_of_acc(acc)


__all__ = ["rng_for", "rand_i8", "rand_i32", "store_out", "readback32", "expect32", "narrow",
           "INT32_MIN", "INT32_MAX"]
