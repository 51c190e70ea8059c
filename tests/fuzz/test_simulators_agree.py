"""Mutated programs (flipped bits, extreme fields, random words in the conformance programs) on
the functional and the cycle simulator: both run them or both reject them, with the same error
code at the same instruction, or both time out; runs leave the same DRAM unless the program
is racy (then :func:`sim.functional.find_race` must say so)."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driver.backends import DeviceError, DeviceTimeout, get_backend
from isa.image import ProgramImage, load_image
from sim.functional import RaceError, find_race

from . import inputs
from .harness import STATS, examples


def outcome(backend: str, image: ProgramImage) -> tuple:
    try:
        return ("ok", get_backend(backend).run(image, timeout=3).dram.tobytes())
    except DeviceTimeout:
        return ("timeout",)
    except DeviceError as exc:
        return ("error", int(exc.code), exc.index)


@settings(max_examples=examples(50), derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(k=st.integers(0, len(inputs.image_seeds()) - 1), data=st.data())
def test_functional_and_cycle_agree_on_mutated_programs(k, data):
    seed = load_image(inputs.image_seeds()[k])
    dram = data.draw(inputs.mutate_program(seed.dram, seed.insn_addr, seed.insn_count))
    image = ProgramImage(dram, seed.insn_addr, seed.insn_count, seed.config)
    functional, cycle = outcome("functional", image), outcome("cycle", image)
    STATS.setdefault("simulators agree", Counter())[functional[0]] += 1
    assert functional[0] == cycle[0], (functional[:3], cycle[:3])
    if functional[0] == "ok" and functional != cycle:
        try:
            find_race(image, schedules=12)
        except RaceError:
            return
        raise AssertionError("a race-free program left different DRAM on the two simulators")
    assert functional == cycle, (functional[:3], cycle[:3])
