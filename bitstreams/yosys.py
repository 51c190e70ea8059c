"""Yosys commands the builds run between reading the design and ``synth_ecp5``."""

from __future__ import annotations

from hw.sram import COLLISION_ATTR, MAX_READS

__all__ = ["UNDEFINED_COLLISIONS"]


def _undefined_collisions() -> str:
    # The memories are collected first (``$mem_v2``: its attributes are the memory's); the mask
    # has a bit per (read port, write port) pair and must be exactly that wide, and each
    # marked memory has one write port.
    marked = f"t:$mem_v2 a:{COLLISION_ATTR}=undefined %i r:WR_PORTS=1 %i"
    lines = ["proc", "memory_collect"]
    lines += [f"setparam -set RD_COLLISION_X_MASK {n}'b{'1' * n} {marked} r:RD_PORTS={n} %i"
              for n in range(1, MAX_READS + 1)]
    return "\n".join(lines) + "\n"


#: Marks the collisions of the core's block RAMs (:mod:`hw.sram`) undefined, so that Yosys maps
#: them to DP16KD without the fabric that would emulate Amaranth's old-data-on-collision promise
#: (a delayed write and a bypass multiplexer after the read data). Not in the build's script:
#: measured on ecp5-large it placed and routed worse (docs/hardware.md §12, session 18); a
#: Yosys script may add it after reading the design.
UNDEFINED_COLLISIONS = _undefined_collisions()
