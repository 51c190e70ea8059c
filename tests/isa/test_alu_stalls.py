"""``isa.arch.alu_stalls`` (the tensor ALU's waits, vectorised) against the rule written out
one micro-op at a time: t_j = t_{j-1} + 1 + w_j, w_j the least wait with t_j - t_k >= D for
each k in {j - 1, j - 2} that j depends on (D = 3 for MUL, else 2)."""

import numpy as np
import pytest

from isa.arch import (ALU_FORWARD_DISTANCE, ALU_MUL_FORWARD_DISTANCE, alu_stalls,
                      alu_waits)


def sequential_waits(dst, src, mul):
    """The waits w_1 ... w_{n-1}, from the issue times, one micro-op at a time."""
    d = ALU_MUL_FORWARD_DISTANCE if mul else ALU_FORWARD_DISTANCE
    t, waits = [0], []
    for j in range(1, len(dst)):
        w = 0
        for k in (j - 1, j - 2):
            if k >= 0 and (dst[j] == dst[k] or (src is not None and src[j] == dst[k])):
                w = max(w, d - (t[-1] + 1 - t[k]))
        waits.append(w)
        t.append(t[-1] + 1 + w)
    return waits


@pytest.mark.parametrize("mul", [False, True])
@pytest.mark.parametrize("vector", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_alu_stalls_equals_the_sequential_rule(seed, vector, mul):
    rng = np.random.default_rng([seed, vector, mul])
    n = int(rng.integers(0, 200))
    span = int(rng.integers(1, 6))              # few entries: dependences are frequent
    dst = rng.integers(0, span, n)
    src = rng.integers(0, span, n) if vector else None
    got = alu_stalls(dst, src, mul)
    assert got.dtype == np.int64 and got.shape == (max(n - 1, 0),)
    assert got.tolist() == sequential_waits(dst.tolist(), None if src is None
                                            else src.tolist(), mul)


def test_the_waits_of_each_rule():
    same = [5] * 6
    assert alu_stalls(same).tolist() == [1] * 5
    assert alu_stalls(same, mul=True).tolist() == [2] * 5
    alternate = [0, 1] * 4                      # each reads what the one two ahead writes
    assert not alu_stalls(alternate).any()
    assert alu_stalls(alternate, mul=True).tolist() == [0, 1, 0, 1, 0, 1, 0]
    # vector mode: src against the dsts ahead; immediate mode ignores src
    dst, src = [0, 1, 2, 3], [9, 0, 0, 2]
    assert alu_stalls(dst, src).tolist() == [1, 0, 1]
    assert alu_stalls(dst, src, mul=True).tolist() == [2, 0, 2]   # 2: already 3 behind
    assert not alu_stalls(dst, None, mul=True).any()
    assert alu_stalls([7]).size == 0 and alu_stalls([]).size == 0


@pytest.mark.parametrize("seed", range(20))
def test_alu_waits_continue_a_sequence(seed):
    """Waits of a suffix from its dependences and the wait before it equal the whole's."""
    rng = np.random.default_rng(seed)
    dst = rng.integers(0, 3, 80)
    whole = alu_stalls(dst, None, True)
    cut = int(rng.integers(2, 79))              # position of the suffix's first micro-op
    dep1 = dst[cut:] == dst[cut - 1:-1]
    dep2 = dst[cut:] == dst[cut - 2:-2]
    part = alu_waits(dep1, dep2, True, int(whole[cut - 2]))
    assert part.tolist() == whole[cut - 1:].tolist()
