"""The core never uses a block-RAM read that collides with a write (hw.sram), which is what lets
the bitstream's synthesis leave such collisions undefined.

``hw.sram.poisoned_collisions`` makes every colliding read return the inverse of the old data;
first that the poison works (a block RAM alone, Amaranth's simulator), then the whole poisoned
core on Verilator: conformance vectors, generated programs (bad ones included) and random
programs, against the expected DRAM and the functional simulator.
"""

from functools import lru_cache

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from hw.sram import block_ram, poisoned_collisions
from isa.conformance import conformance_programs, random_program
from isa.errors import ErrorCode
from isa.image import load_image
from sim.functional import run_image as run_functional

from .conftest import VECTORS, require_verilator


def _ram_bench(poison: bool) -> list:
    """(read data seen, cycle) of a write of 0x5A to entry 3 (old 0x11) while reading it, then
    reads of entry 3 with ``en`` low, then a plain read of it."""
    m = Module()
    if poison:
        with poisoned_collisions():
            w, (r,) = block_ram(m, "ram", shape=8, depth=8)
    else:
        w, (r,) = block_ram(m, "ram", shape=8, depth=8)
    seen = []

    async def bench(ctx):
        ctx.set(w.addr, 3), ctx.set(w.data, 0x11), ctx.set(w.en, 1)
        await ctx.tick()
        ctx.set(w.data, 0x5A)
        ctx.set(r.addr, 3), ctx.set(r.en, 1)               # the collision
        await ctx.tick()
        ctx.set(w.en, 0), ctx.set(r.en, 0)
        seen.append(ctx.get(r.data))                        # the colliding read's data
        await ctx.tick()
        seen.append(ctx.get(r.data))                        # held while en is low
        ctx.set(r.en, 1)
        await ctx.tick()
        seen.append(ctx.get(r.data))                        # no collision: the new data
        ctx.set(r.addr, 2), ctx.set(w.addr, 3), ctx.set(w.en, 1)
        await ctx.tick()
        seen.append(ctx.get(r.data))                        # another entry written: no poison

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return seen


def test_poison_inverts_only_colliding_reads():
    assert _ram_bench(poison=False) == [0x11, 0x11, 0x5A, 0x00]
    assert _ram_bench(poison=True) == [0x11 ^ 0xFF, 0x11 ^ 0xFF, 0x5A, 0x00]


@lru_cache(maxsize=None)
def _poisoned_runs(batch: str):
    """Run ``batch``'s images on the poisoned core once; (names, images, results)."""
    from hw.rtlsim import run_images
    require_verilator()
    cfg_name, kind = batch.split(":")
    if kind == "shared":
        names = sorted(p.name[:-len(".in.npz")] for p in VECTORS.glob(f"{cfg_name}-*.in.npz"))
        images = [load_image(VECTORS / f"{n}.in.npz") for n in names]
        bp = [None] * len(names)
    elif kind == "generated":
        progs = conformance_programs(cfg_name)
        names, images = [p.name for p in progs], [p.image for p in progs]
        bp = [77 if i % 2 else None for i in range(len(names))]
    else:
        names = list(RANDOM_SEEDS)
        images = [random_program(cfg_name, s) for s in names]
        bp = [s if s % 2 else None for s in names]
    results = run_images(images, backpressure=bp, max_cycles=2_000_000, poison=True)
    return names, images, results


RANDOM_SEEDS = range(500, 540)
BATCHES = ["small:shared", "default:shared", "small:generated", "default:generated",
           "small:random"]


@pytest.mark.parametrize("batch", BATCHES)
def test_poisoned_core_gives_the_same_results(batch):
    names, images, results = _poisoned_runs(batch)
    assert names, f"no programs in {batch}"
    progs = ({p.name: p for p in conformance_programs(batch.split(":")[0])}
             if batch.endswith(":generated") else {})
    wrong = []
    for name, image, result in zip(names, images, results):
        prog = progs.get(name)
        if prog is not None and prog.is_bad:
            ok = result.done and (result.error, result.error_index) == (
                prog.expected_error, prog.expected_index)
        elif prog is not None:
            ok = result.done and result.error == ErrorCode.NONE and prog.check_dram(
                result.dram) == []
        else:
            ok = result.done and result.error == ErrorCode.NONE and np.array_equal(
                result.dram, run_functional(image).dram)
        if not ok:
            wrong.append(f"{name}: done={result.done} {result.error.name}@{result.error_index}")
    assert not wrong, f"{len(wrong)} of {len(names)} differ on the poisoned core: {wrong[:5]}"
