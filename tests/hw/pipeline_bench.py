"""Shared by the GEMM and tensor-ALU pipeline benches: run a testbench on the Amaranth
simulator, and the GEMM's back-to-back issue contract (the ALU's, with its stalls, is in
test_alu_pipeline.py)."""

from amaranth.sim import Simulator


def simulate(dut, bench) -> None:
    """Run the async testbench ``bench`` on ``dut`` with a clock."""
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def assert_back_to_back(log: dict, n: int, latency: int) -> None:
    """Micro-op j of a start in cycle 0 issues in 1 + j and writes in 1 + j + ``latency``;
    the unit is busy from its first issue to its last write."""
    assert log["writes"] == [1 + j + latency for j in range(n)]
    assert log["busy"] == n + latency
