"""The core's block RAMs: one write port, synchronous read ports, and no promise about a read
of the entry being written in the same cycle.

Amaranth's read port promises the old data on such a collision; an ECP5 DP16KD does not, so
Yosys keeps the promise in fabric (a write delayed by a cycle and a bypass multiplexer after
the read data: a LUT and a route on every block-RAM path, docs/hardware.md §12). The core
never uses a colliding read's data: the ACC readers forward every write landing in their read's
cycle, a command queue never reads the entry being written, and the tokens and the compute
sequence keep INP, WGT, UOP and OUT reads apart from their writes. So these memories carry
:data:`COLLISION_ATTR`, and a synthesis may mark their collisions undefined
(:data:`bitstreams.yosys.UNDEFINED_COLLISIONS`; the bitstream build does not yet: it placed
and routed worse on ecp5-large, docs/hardware.md §12 session 18).

That reasoning is checked, not trusted: elaborated inside :func:`poisoned_collisions` (the
``poison`` RTL build of :mod:`hw.rtlsim`), every read that collides with a write returns the
inverse of the old data, and the conformance programs must still give the functional
simulator's DRAM (tests/hw/test_rtl_collisions.py).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib.memory import Memory

__all__ = ["COLLISION_ATTR", "MAX_READS", "block_ram", "poisoned_collisions", "PoisonedRead"]

#: The attribute (value ``"undefined"``) on a memory whose same-cycle read-write collisions
#: the design never depends on.
COLLISION_ATTR = "vta_collision"
#: At most this many read ports per memory (the ACC buffer has two; the build's Yosys commands
#: mark each count's collision mask).
MAX_READS = 2

_POISON = ContextVar("vta_poison_collisions", default=False)


@contextmanager
def poisoned_collisions():
    """Elaborate inside this block to make every colliding read return garbage (simulation)."""
    token = _POISON.set(True)
    try:
        yield
    finally:
        _POISON.reset(token)


@dataclass(frozen=True)
class PoisonedRead:
    """A read port's ``addr``, ``en`` and ``data``, the data inverted after a collision."""
    addr: Signal
    en: Signal
    data: Signal


def block_ram(m: Module, name: str, *, shape, depth: int, reads: int = 1):
    """A memory ``name`` in ``m`` with one write port and ``reads`` synchronous read ports
    (data the cycle after the address, held while ``en`` is low); returns
    ``(write_port, [read_port, ...])``."""
    if not 1 <= reads <= MAX_READS:
        raise ValueError(f"a block RAM has 1 to {MAX_READS} read ports, not {reads}")
    mem = Memory(shape=shape, depth=depth, init=[], attrs={COLLISION_ATTR: "undefined"})
    m.submodules[name] = mem
    wp = mem.write_port()
    rps = [mem.read_port() for _ in range(reads)]
    if _POISON.get():
        rps = [_poison(m, f"{name}_r{i}", wp, rp) for i, rp in enumerate(rps)]
    return wp, rps


def _poison(m: Module, name: str, wp, rp) -> PoisonedRead:
    # ``hit``: the data register was last loaded in a cycle that wrote the entry it read
    addr = Signal.like(rp.addr, name=f"{name}_addr")
    en = Signal(init=1, name=f"{name}_en")
    data = Signal.like(rp.data, name=f"{name}_data")
    hit = Signal(name=f"{name}_collided")
    m.d.comb += [rp.addr.eq(addr), rp.en.eq(en), data.eq(Mux(hit, ~rp.data, rp.data))]
    with m.If(en):
        m.d.sync += hit.eq(wp.en.any() & (wp.addr == addr))
    return PoisonedRead(addr, en, data)
