import numpy as np
import pytest

from driver import (AluOp, Device, DeviceError, DeviceTimeout, Loop, MemType, StreamError, Uop,
                    alu_kernel, gemm_kernel)
from driver.backends.simlink import SimulatedLink
from driver.testlib import alu_reference, alu_test, pack, unpack
from isa.encoding import Load, decode_program
from isa.errors import ErrorCode
from isa.image import load_image
from sim.functional import find_race


def deps(insn):
    return "".join(c if f else "." for c, f in zip("PpUu", insn.deps))  # pop prev/next, push


def test_dependency_insertion_and_epilogue():
    dev = Device("small", dram_bytes=1 << 20)
    acc = dev.array(np.zeros((4, 1, 4), np.int32))
    out = dev.empty((4, 1, 4), np.int8)
    s = dev.stream()
    s.load_2d(MemType.ACC, 0, acc, x_size=4)
    s.alu(alu_kernel(AluOp.ADD, [Uop(0, 0)], [Loop(4, dst=1, src=1)], imm=1))
    s.dep_push("compute", "store")     # lands on the ALU itself
    s.dep_pop("compute", "store")      # waits for the STORE
    s.store_2d(0, out, x_size=4)
    s.dep_push("store", "compute")     # lands on the STORE
    s.dep_pop("store", "compute")
    kinds = [type(i).__name__ for i in s.instructions]
    assert kinds == ["Load", "Load", "Alu", "Store"]
    assert [deps(i) for i in s.instructions] == ["....", "....", "...u", "P.U."]
    image = s.build_image()
    insns = decode_program(image.instruction_bytes, dev.config)
    # The original runtime's epilogue (reference §8.4): store and load no-ops push to compute;
    # the pending compute pop becomes a no-op when the epilogue pops the same queue, then a
    # compute no-op pops both; FINISH carries no pops. No-ops are encoded as the original's
    # (STORE and compute LOAD with memory type UOP, load LOAD INP).
    tail = [(type(i).__name__, deps(i)) for i in insns[4:]]
    assert tail == [("Store", "..U."), ("Load", "...u"), ("Load", ".p.."), ("Load", "Pp.."),
                    ("Finish", "....")]
    assert [insns[n].memory_type for n in (4, 5, 6, 7)] == [MemType.UOP, MemType.INP,
                                                            MemType.UOP, MemType.UOP]


def test_pop_twice_commits_a_noop_and_bad_queues_are_rejected():
    dev = Device("tiny", dram_bytes=1 << 20)
    s = dev.stream()
    s.dep_push("compute", "load")
    s.dep_push("compute", "load")
    s.dep_pop("compute", "load")
    s.dep_pop("compute", "load")       # the first pop becomes a load no-op
    assert [(type(i).__name__, deps(i)) for i in s.instructions][-1] == ("Load", ".p..")
    with pytest.raises(StreamError, match="no token queue from load to store"):
        s.dep_push("load", "store")
    with pytest.raises(StreamError, match="unknown stage 'fetch'"):
        s.dep_pop("fetch", "load")
    assert s.synchronize() is not None


def test_unmatched_pop_is_reported_before_launch():
    dev = Device("tiny", dram_bytes=1 << 20)
    s = dev.stream()
    s.dep_pop("load", "compute")
    s.alu(alu_kernel(AluOp.ADD, [Uop(0, 0)], imm=1))
    with pytest.raises(StreamError, match=r"l2g \(compute pops 1 more token"):
        s.synchronize()


def test_transfers_are_checked_against_their_buffer():
    dev = Device("tiny", dram_bytes=1 << 20)
    buf = dev.empty((4, 2), np.int32)   # 4 ACC elements of 8 bytes
    s = dev.stream()
    with pytest.raises(StreamError, match="reach past the end"):
        s.load_2d(MemType.ACC, 0, buf, 1, x_size=4)
    with pytest.raises(StreamError, match="x_stride = 1 is smaller than x_size = 2"):
        s.load_2d(MemType.ACC, 0, buf, x_size=2, y_size=2, x_stride=1)
    with pytest.raises(StreamError, match="cannot load UOP"):
        s.load_2d(MemType.UOP, 0, buf, x_size=1)
    buf.free()
    with pytest.raises(Exception, match="use after free"):
        s.load_2d(MemType.ACC, 0, buf, x_size=1)


def run_alu_kernels(dev, kernels, rounds, **stream_options):
    """Apply ``kernels`` round-robin to one ACC region; compare with numpy."""
    cfg = dev.config
    rng = np.random.default_rng(1)
    tiles = max(len(k) for k in kernels)
    host = rng.integers(-1000, 1000, (cfg.batch, tiles * cfg.block_out), dtype=np.int32)
    acc = dev.array(pack(host, cfg.batch, cfg.block_out))
    out = dev.empty((1, tiles, cfg.batch, cfg.block_out), np.int8)
    s = dev.stream(**stream_options)
    s.load_2d(MemType.ACC, 0, acc, x_size=tiles)
    expected = host.astype(np.int64)
    for r in range(rounds):
        for k in kernels:
            s.alu(k)
            cols = np.concatenate([np.arange(u.dst * cfg.block_out, (u.dst + 1) * cfg.block_out)
                                   for u in k.uops])
            expected[:, cols] = alu_reference(k.alu_op, expected[:, cols], k.imm)
    s.dep_push("compute", "store")
    s.dep_pop("compute", "store")
    s.store_2d(0, out, x_size=tiles)
    s.synchronize()
    assert np.array_equal(unpack(out.read()), expected.astype(np.int32).astype(np.int8))
    return s


def test_uop_cache_evicts_and_reloads_under_pressure():
    dev = Device("tiny", dram_bytes=1 << 20, keep_images=True)
    depth = dev.config.uop_depth                   # 64 micro-ops
    # Five kernels of 20 micro-ops each: at most three fit at a time.
    kernels = [alu_kernel(AluOp.ADD, [Uop(i, i) for i in range(20)], imm=n + 1)
               for n in range(5)]
    s = run_alu_kernels(dev, kernels, rounds=3)
    assert 5 * 20 > depth
    assert s.uop_evictions > 0 and s.uop_loads == 15   # every use misses in round-robin
    assert len(s.launches) == 1                          # all in one launch
    loads = [i for i in decode_program(s.images[0].instruction_bytes, dev.config)
             if isinstance(i, Load) and i.memory_type == MemType.UOP and i.x_size]
    # The ring wrapped, yet each kernel's micro-ops were staged once at a stable address.
    assert len({i.sram_base for i in loads}) == 3 and len({i.dram_base for i in loads}) == 5


def test_resident_kernels_are_not_reloaded():
    dev = Device("tiny", dram_bytes=1 << 20)
    kernels = [alu_kernel(AluOp.MAX, [Uop(i, i) for i in range(8)], imm=-n) for n in range(3)]
    s = run_alu_kernels(dev, kernels, rounds=4)
    assert s.uop_loads == 3 and s.uop_evictions == 0


def test_automatic_flush_on_a_long_stream():
    dev = Device("small", dram_bytes=1 << 20, keep_images=True)
    rng = np.random.default_rng(2)
    c = dev.config
    # 32 row groups x (LOAD, ALU, STORE, no-ops) is far more than 40 instructions.
    outcome = alu_test(dev, AluOp.ADD, True, 32 * c.batch, 8 * c.block_out, False, rng,
                       insn_capacity=40)
    assert outcome.ok
    # alu_test closes its stream; count the launches through the device.
    assert dev.launch_count > 4


def test_flush_carries_outstanding_tokens(tmp_path):
    dev = Device("tiny", dram_bytes=1 << 20, image_dir=tmp_path)
    kernels = [alu_kernel(AluOp.ADD, [Uop(i, i) for i in range(4)], imm=1)]
    s = dev.stream(insn_capacity=24)
    s.dep_push("compute", "load")   # a token in flight across every flush
    for _ in range(30):
        s.alu(kernels[0])
    s.dep_pop("compute", "load")
    s.synchronize()
    assert s.flushes >= 2 and len(s.launches) == s.flushes + 1
    # Every launch was saved, is balanced and race-free.
    files = sorted(tmp_path.glob("launch-*.npz"))
    assert len(files) == len(s.launches)
    for f in files:
        image = load_image(f)
        assert image.insn_count <= 24
        find_race(image)


def alu_units(dev, kernels, **stream_options):
    """Each kernel in its own unit: LOAD ACC, ALU, STORE to its own output."""
    cfg = dev.config
    rng = np.random.default_rng(3)
    tiles = max(len(k) for k in kernels)
    host = rng.integers(-1000, 1000, (cfg.batch, tiles * cfg.block_out), dtype=np.int32)
    acc = dev.array(pack(host, cfg.batch, cfg.block_out))
    outs = [dev.empty((1, tiles, cfg.batch, cfg.block_out), np.int8) for _ in kernels]
    s = dev.stream(**stream_options)
    for n, (k, out) in enumerate(zip(kernels, outs)):
        with s.unit():
            if n:
                s.dep_pop("store", "compute")
            s.load_2d(MemType.ACC, 0, acc, x_size=tiles)
            s.alu(k)
            s.dep_push("compute", "store")
            s.dep_pop("compute", "store")
            s.store_2d(0, out, x_size=tiles)
            s.dep_push("store", "compute")
    s.synchronize()
    for k, out in zip(kernels, outs):
        expected = alu_reference(k.alu_op, host, k.imm).astype(np.int8)
        assert np.array_equal(unpack(out.read()), expected)
    return s


def test_flush_inside_a_unit_moves_the_unit():
    dev = Device("tiny", dram_bytes=1 << 20, keep_images=True)
    kernels = [alu_kernel(AluOp.ADD, [Uop(i, i) for i in range(10)], imm=n) for n in range(12)]
    s = alu_units(dev, kernels, insn_capacity=30)
    assert s.flushes >= 2 and len(s.launches) == s.flushes + 1
    assert all(image.insn_count <= 30 for image in s.images)
    for image in s.images:
        find_race(image)


def test_uop_staging_overflow_flushes():
    dev = Device("tiny", dram_bytes=1 << 20)
    kernels = [alu_kernel(AluOp.ADD, [Uop(i, i) for i in range(10)], imm=n) for n in range(6)]
    s = alu_units(dev, kernels, uop_capacity=25)
    assert len(s.launches) == 3  # two 10-uop kernels per launch


def test_a_unit_larger_than_a_launch_is_an_error():
    dev = Device("tiny", dram_bytes=1 << 20)
    s = dev.stream(insn_capacity=24)
    k = alu_kernel(AluOp.ADD, [Uop(0, 0)], imm=1)
    with pytest.raises(StreamError, match="a unit does not fit in one launch"):
        with s.unit():
            for _ in range(30):
                s.alu(k)


def deadlocked_stream(dev):
    """Compute waits for load, which waits for compute: a circular wait."""
    acc = dev.array(np.zeros(64, np.int32))
    inp = dev.array(np.zeros(64, np.int8))
    s = dev.stream()
    s.dep_pop("load", "compute")
    s.load_2d(MemType.ACC, 0, acc, x_size=1)
    s.dep_push("compute", "load")
    s.dep_pop("compute", "load")
    s.load_2d(MemType.INP, 0, inp, x_size=1)
    s.dep_push("load", "compute")
    return s


def test_deadlock_is_reported_by_the_functional_backend():
    dev = Device("tiny", dram_bytes=1 << 20)
    with pytest.raises(DeviceError, match=r"compute waits at instruction 0 .* l2g") as info:
        deadlocked_stream(dev).synchronize()
    assert info.value.code == ErrorCode.DEADLOCK


def test_deadlock_ends_in_a_timeout_on_a_board_that_hangs():
    link = SimulatedLink(dram_bytes=1 << 20, detect_deadlock=False)
    dev = Device("tiny", "board", dram_bytes=1 << 20, link=link)
    with pytest.raises(DeviceTimeout) as info:
        deadlocked_stream(dev).synchronize(timeout=0.2)
    message = str(info.value)
    assert "timed out after 0.2 s" in message
    assert "compute busy, waiting on a token (compute_stall advancing)" in message
    assert "load busy, waiting on a token (load_stall advancing)" in message
    assert "store idle" in message and "fetch idle" in message


def test_deadlock_detected_by_the_board_names_the_instruction():
    dev = Device("tiny", "board", dram_bytes=1 << 20, link=SimulatedLink(dram_bytes=1 << 20))
    with pytest.raises(DeviceError, match=r"instruction 0 \(Load\(.*DEADLOCK.*pop flags"):
        deadlocked_stream(dev).synchronize()


def test_functional_timeout_names_the_module():
    dev = Device("small", dram_bytes=1 << 20)
    kernel = gemm_kernel([Uop(0, 0, 0)], [Loop(100, dst=1)])
    s = dev.stream()
    for _ in range(50):
        s.gemm(kernel)
    with pytest.raises(DeviceTimeout, match=r"timed out after 0 s: the compute module was "
                                            r"about to execute LOAD after 0 instructions"):
        s.synchronize(timeout=0)


def test_kernel_errors_name_the_kernel():
    dev = Device("tiny", dram_bytes=1 << 20)
    s = dev.stream()
    with pytest.raises(Exception, match="reaches ACC index 128"):
        s.alu(alu_kernel(AluOp.ADD, [Uop(0, 0)], [Loop(129, dst=1)], imm=0, name="k1"))
    with pytest.raises(Exception, match="is a GEMM kernel; alu"):
        s.alu(gemm_kernel([Uop()]))
