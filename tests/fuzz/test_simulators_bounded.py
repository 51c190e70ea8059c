"""Pathological programs: loops describing billions of micro-op executions.

The simulators run them in bounded memory (chunks of ``UOP_CHUNK`` executions), find an
out-of-range index from the loop bounds without listing the executions, and honour a
wall-clock timeout inside one instruction. The functional simulator, the cycle simulator and
the RTL give the same outcome: the same error code, instruction, field and value, or a
timeout. Programs that finish are checked against numpy through many chunks.
"""

from __future__ import annotations

import resource
import time

import numpy as np
import pytest

from driver.backends import DeviceError, DeviceTimeout, get_backend
from isa.asm import assemble
from isa.config import load_config
from isa.encoding import Uop, encode_uops
from isa.errors import ErrorCode
from isa.image import ProgramImage
from sim import functional
from sim.functional import first_bad_uop, run_image

CFG = load_config("small")
UOP_AT = 8192


def image(body: str, uops, *, cfg=CFG, data=None) -> ProgramImage:
    """LOAD UOP of ``uops``, then ``body``, then FINISH; ``data``: {byte address: bytes}."""
    dram = np.zeros(1 << 16, np.uint8)
    text = (f"LOAD UOP sram_base=0 dram_base={UOP_AT // 4} y_size=1 x_size={len(uops)}\n"
            f"{body}\nFINISH\n")
    code = np.frombuffer(assemble(text, cfg), np.uint8)
    dram[:code.size] = code
    raw = np.frombuffer(encode_uops(uops, cfg), np.uint8)
    dram[UOP_AT:UOP_AT + raw.size] = raw
    for at, blob in (data or {}).items():
        dram[at:at + len(blob)] = np.frombuffer(blob, np.uint8)
    return ProgramImage(dram, 0, code.size // 16, cfg)


HUGE = "iter_out=16383 iter_in=16383"        # 2^28 rounds of the micro-op range
A = CFG.acc_depth - 1
PATHOLOGICAL = {
    # Every index in range: runs "for hours"; must end in a timeout, not a MemoryError.
    "gemm-in-range": image(f"GEMM uop_bgn=0 uop_end=8 {HUGE}", [Uop(0, 0, 0)] * 8),
    "alu-in-range": image(f"ALU ADD imm=1 uop_bgn=0 uop_end=8 {HUGE}", [Uop(0, 0)] * 8),
    # The third inner iteration's destination is past ACC: every backend stops at once.
    "gemm-early-bad": image(f"GEMM uop_bgn=0 uop_end=8 {HUGE} dst_factor_in={A}",
                            [Uop(0, 0, 0)] * 8),
    "alu-early-bad": image(f"ALU MAX uop_bgn=0 uop_end=8 {HUGE} src_factor_in=1",
                           [Uop(0, 0)] * 8),
    "gemm-reset-early-bad": image(f"GEMM reset uop_bgn=0 uop_end=2 {HUGE} dst_factor_in={A}",
                                  [Uop(0, 0, 0)] * 2),
}
# Bad only after 16 million executions: the simulators find it from the loop bounds; the RTL
# gets there in real time, so it is left out of the RTL comparison.
LATE_BAD = image(f"GEMM uop_bgn=0 uop_end=8 {HUGE} dst_factor_out=1", [Uop(0, 0, 0)] * 8)


def outcome(backend: str, img: ProgramImage, timeout: float) -> tuple:
    start = time.monotonic()
    try:
        get_backend(backend).run(img, timeout=timeout)
        return ("ok",)
    except DeviceTimeout:
        assert time.monotonic() - start < timeout + 5, f"{backend} overshot its timeout"
        return ("timeout",)
    except DeviceError as exc:
        return ("error", ErrorCode(exc.code), exc.index, exc.field, exc.value)


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_functional_and_cycle_agree_in_bounded_memory(name):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    got = {b: outcome(b, PATHOLOGICAL[name], timeout=1.0) for b in ("functional", "cycle")}
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert got["functional"] == got["cycle"], got
    assert got["functional"][0] == ("timeout" if "in-range" in name else "error")
    assert grown_mib < 512, f"peak memory grew by {grown_mib:.0f} MiB"


def test_late_bad_index_is_found_from_the_loop_bounds():
    got = {b: outcome(b, LATE_BAD, timeout=5.0) for b in ("functional", "cycle")}
    assert got["functional"] == got["cycle"] == (
        "error", ErrorCode.SRAM_RANGE, 1, "dst", 16382 + 0), got


def test_rtl_gives_the_same_outcomes():
    from driver.backends import BackendUnavailable
    from driver.backends.rtl import RtlBackend

    try:
        RtlBackend.check_available()
    except BackendUnavailable as exc:
        pytest.skip(f"rtl backend unavailable: {exc}")
    for name, img in sorted(PATHOLOGICAL.items()):
        rtl = outcome("rtl", img, timeout=1.0)
        assert rtl == outcome("functional", img, timeout=1.0), (name, rtl)


@pytest.mark.parametrize("seed", range(40))
def test_first_bad_uop_matches_listing_every_execution(seed):
    """The analytic position of the first bad execution against a brute-force listing."""
    rng = np.random.default_rng(seed)
    n_out, n_in, nu = (int(x) for x in rng.integers(1, 9, 3))
    insn = type("Insn", (), dict(
        iter_out=n_out, iter_in=n_in, dst_factor_out=int(rng.integers(0, 5)),
        dst_factor_in=int(rng.integers(0, 5)), src_factor_out=int(rng.integers(0, 5)),
        src_factor_in=int(rng.integers(0, 5)), wgt_factor_out=int(rng.integers(0, 5)),
        wgt_factor_in=int(rng.integers(0, 5))))()
    bases = tuple(rng.integers(0, 20, nu) for _ in range(3))
    limits = [int(rng.integers(5, 40)), int(rng.integers(5, 40)), None]
    factors = functional._loop_factors(insn)
    first = None
    for pos in range(n_out * n_in * nu):
        o, rest = divmod(pos, n_in * nu)
        i, u = divmod(rest, nu)
        if any(lim is not None and bases[k][u] + o * factors[k][0] + i * factors[k][1] >= lim
               for k, lim in enumerate(limits)):
            first = pos
            break
    assert first_bad_uop(insn, bases, limits) == first


def test_chunked_execution_equals_numpy(monkeypatch):
    """A GEMM and an ALU spanning dozens of chunks (a tiny UOP_CHUNK) against numpy."""
    monkeypatch.setattr(functional, "UOP_CHUNK", 8)
    rng = np.random.default_rng(1)
    inp = rng.integers(-128, 128, (CFG.inp_depth, CFG.batch, CFG.block_in), dtype=np.int8)
    wgt = rng.integers(-128, 128, (CFG.wgt_depth, CFG.block_out, CFG.block_in), dtype=np.int8)
    uops = [Uop(u % 3, u, 2 * u) for u in range(5)]
    n_out, n_in = 7, 6
    body = (f"LOAD INP sram_base=0 dram_base={16384 // CFG.inp_elem_bytes} y_size=1 "
            f"x_size={CFG.inp_depth}\n"
            f"LOAD WGT sram_base=0 dram_base={32768 // CFG.wgt_elem_bytes} y_size=1 "
            f"x_size={CFG.wgt_depth} push_next\n"
            f"GEMM reset uop_bgn=0 uop_end=5 iter_out={n_out} iter_in={n_in} "
            f"dst_factor_out=3 pop_prev\n"
            f"GEMM uop_bgn=0 uop_end=5 iter_out={n_out} iter_in={n_in} dst_factor_out=3 "
            f"src_factor_out=5 src_factor_in=1 wgt_factor_in=1\n"
            f"ALU SHR imm=3 uop_bgn=0 uop_end=5 iter_out={n_out} iter_in={n_in} "
            f"dst_factor_out=3\n"
            f"ALU ADD uop_bgn=0 uop_end=5 iter_out={n_out} iter_in={n_in} dst_factor_out=3 "
            f"src_factor_in=1 push_next\n"
            f"STORE sram_base=0 dram_base={49152 // CFG.out_elem_bytes} y_size=1 x_size=24 "
            f"pop_prev push_prev\nLOAD UOP x_size=0 pop_next")
    img = image(body, uops, data={16384: inp.tobytes(), 32768: wgt.tobytes()})
    acc = np.zeros((CFG.acc_depth, CFG.batch, CFG.block_out), np.int64)
    order = [(o, i, u) for o in range(n_out) for i in range(n_in) for u in range(5)]
    for o, i, u in order:
        acc[uops[u].dst + 3 * o] += (inp[uops[u].src + 5 * o + i].astype(np.int64)
                                     @ wgt[uops[u].wgt + i].astype(np.int64).T)
    acc = acc.astype(np.int32)
    for o, i, u in order:
        d = uops[u].dst + 3 * o
        acc[d] = acc[d] >> 3
    for o, i, u in order:           # sequential: a later source may be an earlier destination
        d, s = uops[u].dst + 3 * o, uops[u].src + i
        acc[d] = (acc[d].astype(np.int64) + acc[s]).astype(np.int32)
    want = acc[:24].astype(np.int8).reshape(-1)
    for backend in ("functional", "cycle"):
        dram = get_backend(backend).run(img).dram
        got = dram[49152:49152 + 24 * CFG.out_elem_bytes].view(np.int8)
        np.testing.assert_array_equal(got, want, err_msg=backend)
    assert np.array_equal(run_image(img).dram[49152:49152 + want.size].view(np.int8), want)


def test_hardware_errors_are_explained_with_field_and_value():
    """What the rtl and cycle backends print for a hardware (code, index): the functional
    message (replayed), or from the instruction's fields alone when the replay runs out."""
    from driver.backends.explain import explain_error

    img = image("GEMM uop_bgn=0 uop_end=1 iter_out=0 iter_in=1", [Uop(0, 0, 0)])
    for budget in (10.0, 0.0):
        err = explain_error(img, ErrorCode.EMPTY_LOOP, 1, "the RTL core", budget=budget)
        assert (err.code, err.index, err.field, err.value) == (ErrorCode.EMPTY_LOOP, 1,
                                                               "iter_out", 0)
        assert str(err).startswith("instruction 1: GEMM with iter_out = 0 (an empty loop)")
    err = explain_error(PATHOLOGICAL["gemm-early-bad"], ErrorCode.SRAM_RANGE, 1, "the core")
    assert (err.field, err.value) == ("dst", 2080514) and "GEMM dst index 2080514" in str(err)
