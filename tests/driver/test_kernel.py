import pytest

from driver import KernelError, Loop, Uop, alu_kernel, gemm_kernel
from driver.kernel import KernelRegistry, UopResidency
from isa.config import load_config
from isa.encoding import AluOp

CFG = load_config("small")  # INP 256, WGT 128, ACC 128 entries, 256 micro-ops


def test_loop_mapping_follows_the_original():
    g = gemm_kernel([Uop(0, 0, 0)], [Loop(4, dst=1, src=2, wgt=3)])
    assert g.loop_fields() == dict(iter_out=4, iter_in=1, dst_factor_out=1, dst_factor_in=0,
                                   src_factor_out=2, src_factor_in=0, wgt_factor_out=3,
                                   wgt_factor_in=0)
    a = alu_kernel(AluOp.ADD, [Uop(0, 0)], [Loop(4, dst=1, src=1)], imm=3)
    f = a.loop_fields()
    assert (f["iter_out"], f["iter_in"], f["dst_factor_in"]) == (1, 4, 1)


@pytest.mark.parametrize("make, message", [
    (lambda: gemm_kernel([]), "at least one micro-op"),
    (lambda: gemm_kernel([Uop()], [Loop(2)] * 3), "3 loops"),
    (lambda: gemm_kernel([Uop()], [Loop(0)]), "extent 0"),
    (lambda: alu_kernel(AluOp.ADD, [Uop()], imm=1 << 15), "does not fit in 16 bits"),
    (lambda: gemm_kernel([Uop(-1, 0, 0)]), "negative index"),
])
def test_malformed_kernels(make, message):
    with pytest.raises(KernelError, match=message):
        make()


def test_index_ranges_through_loops():
    ok = gemm_kernel([Uop(0, 0, 0)], [Loop(128, dst=1, src=1, wgt=1)])
    ok.check(CFG)
    bad = gemm_kernel([Uop(1, 0, 0)], [Loop(128, dst=1)])
    with pytest.raises(KernelError, match=r"micro-op 0 .* reaches ACC index 128 .* 128 entries"):
        bad.check(CFG)
    wgt = gemm_kernel([Uop(0, 0, 0)], [Loop(2, wgt=64), Loop(2, wgt=64)])
    with pytest.raises(KernelError, match="reaches WGT index 128"):
        wgt.check(CFG)
    # An immediate ALU kernel never reads src; a reset GEMM never reads src or wgt.
    alu_kernel(AluOp.MAX, [Uop(0, 500)], imm=0).check(CFG)
    gemm_kernel([Uop(0, 999, 999)], reset=True).check(CFG)
    with pytest.raises(KernelError, match="reaches ACC index 500"):
        alu_kernel(AluOp.MAX, [Uop(0, 500)]).check(CFG)


def test_portable_hazard_rule():
    k = alu_kernel(AluOp.ADD, [Uop(0, 1), Uop(2, 1), Uop(0, 3)])
    k.check(CFG)  # sequential semantics: legal here
    with pytest.raises(KernelError, match="micro-op 2 writes dst 0 like micro-op 0"):
        k.check(CFG, portable=True)


def test_too_many_uops():
    with pytest.raises(KernelError, match="do not fit in the micro-op buffer"):
        gemm_kernel([Uop(0, 0, 0)] * 257).check(CFG)


def test_registry_records_once_and_is_bounded():
    reg = KernelRegistry(limit=2)
    calls = []

    def rec(n):
        calls.append(n)
        return gemm_kernel([Uop(n, 0, 0)])

    a = reg.get("a", lambda: rec(0))
    assert reg.get("a", lambda: rec(1)) is a and calls == [0]
    reg.get("b", lambda: rec(2))
    reg.get("a", lambda: rec(3))          # refreshes a
    reg.get("c", lambda: rec(4))          # evicts b, the least recently used
    assert len(reg) == 2 and calls == [0, 2, 4]
    reg.get("b", lambda: rec(5))
    assert calls[-1] == 5 and reg.recorded == 4


def test_residency_ring_evicts_overlaps():
    res = UopResidency(10)
    k = [gemm_kernel([Uop()] * n) for n in (4, 4, 4)]
    assert res.place(k[0]) == (0, True)
    assert res.place(k[1]) == (4, True)
    assert res.place(k[0]) == (0, False)
    assert res.place(k[2]) == (0, True)   # wraps: evicts k0 only
    assert k[0] not in res and k[1] in res and res.evictions == 1
