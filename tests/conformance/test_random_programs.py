"""Random programs: valid, race-free, token-balanced, deterministic."""

import numpy as np
import pytest

from isa.conformance import random_program
from isa.conformance.analysis import instruction_mix, token_balance
from isa.encoding import Opcode, decode_program
from sim.functional import find_race, run_image

CONFIGS = ("default", "small", "batch2", "tiny")


@pytest.mark.parametrize("config", CONFIGS)
def test_random_programs_run_without_error(config):
    for seed in range(60):
        image = random_program(config, seed)
        run_image(image)
        assert not any(token_balance(image).values()), seed
        insns = decode_program(image.instruction_bytes, image.config)
        assert insns[-1].opcode == Opcode.FINISH
        assert sum(i.opcode == Opcode.FINISH for i in insns) == 1
        assert image.outputs


@pytest.mark.parametrize("config", ("small", "default"))
def test_random_programs_are_race_free(config):
    for seed in range(0, 200, 10):
        find_race(random_program(config, seed), schedules=4, seed=seed)


def test_random_programs_are_deterministic_and_varied():
    a, b = random_program("small", 5), random_program("small", 5)
    assert np.array_equal(a.dram, b.dram) and a.insn_count == b.insn_count
    assert not np.array_equal(a.dram, random_program("small", 6).dram)
    mix = {}
    for seed in range(100):
        for key, n in instruction_mix(random_program("tiny", seed)).items():
            mix[key] = mix.get(key, 0) + n
    for key in ("LOAD_INP", "LOAD_WGT", "LOAD_ACC", "LOAD_ACC_8BIT", "LOAD_UOP", "GEMM",
                "GEMM_reset", "STORE", "padded_loads", "NOP_load", "NOP_compute", "NOP_store",
                "ALU_MIN", "ALU_MAX_imm", "ALU_ADD", "ALU_SHR_imm", "ALU_MUL"):
        assert mix.get(key, 0) > 0, key
