"""Command-queue capacity: a module waiting for a token whose producer sits behind a full
queue deadlocks on the RTL exactly where the functional simulator says (same capacity)."""

import numpy as np
import pytest

from isa.config import load_config
from isa.encoding import Finish, Load, MemType, encode_program
from isa.errors import ErrorCode
from isa.image import ProgramImage
from sim.functional import SimulationError
from sim.functional import run_image as run_functional

from .conftest import require_verilator


def head_of_line_image(depth: int) -> ProgramImage:
    cfg = load_config("tiny").replace(cmd_queue_depth=depth)
    insns = [Load(memory_type=MemType.UOP, x_size=0, pop_prev=True)]      # waits for l2g
    insns += [Load(memory_type=MemType.UOP, x_size=0) for _ in range(2)]  # fill the queue
    insns += [Load(memory_type=MemType.INP, x_size=0, push_next=True),    # the producer
              Finish()]
    code = encode_program(insns, cfg)
    dram = np.zeros(1024, np.uint8)
    dram[:len(code)] = np.frombuffer(code, np.uint8)
    return ProgramImage(dram, 0, len(insns), cfg)


@pytest.mark.parametrize("depth", [2, 3])
def test_full_command_queue_deadlock_matches_the_functional_simulator(depth):
    require_verilator()
    from hw.rtlsim import run_images
    image = head_of_line_image(depth)
    try:
        run_functional(image)
        want = (ErrorCode.NONE, 0)
    except SimulationError as exc:
        want = (exc.code, exc.index)
    assert want == ((ErrorCode.DEADLOCK, 0) if depth == 2 else (ErrorCode.NONE, 0))
    (result,) = run_images([image])
    assert result.done
    assert (result.error, result.error_index if result.error else 0) == want
