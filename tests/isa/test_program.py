"""The device-free program layer (isa.program): token rules, micro-op residency, launch
splitting, linking, files. Results are checked against numpy and the functional simulator."""

import zipfile

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from isa import load_config
from isa.arch import (DEP_FLAGS, QUEUES, STAGES, TOKEN_QUEUES, AluOp, MemType, elem_bytes,
                      module_of, pop_flag, push_flag)
from isa.conformance.analysis import token_balance
from isa.encoding import Finish, Load, Store, Uop, decode_program
from isa.program import (LinkError, Loop, ProgramError, ProgramFormatError, StreamBuilder,
                         alu_kernel, gemm_kernel, load_program)
from sim.functional import find_race, run_image


def deps(insn):
    return "".join(c if f else "." for c, f in zip("PpUu", insn.deps))  # pop prev/next, push


def wrap32(x):
    return np.asarray(x, np.int64).astype(np.uint32).view(np.int32)


def alu_ref(op, a, b):
    """SPEC §4.4, written out here (not the simulator's code)."""
    a, b = np.asarray(a, np.int64), np.broadcast_to(np.asarray(b, np.int64), np.shape(a))
    if op == AluOp.MIN:
        r = np.minimum(a, b)
    elif op == AluOp.MAX:
        r = np.maximum(a, b)
    elif op == AluOp.ADD:
        r = a + b
    elif op == AluOp.MUL:
        r = a * b
    else:
        r = np.where(b >= 0, a >> np.clip(b, 0, 31), (a << np.clip(-b, 0, 32)))
        r = np.where((b < 0) & (-b >= 32), 0, r)
    return wrap32(r & 0xFFFFFFFF)


# ---------------------------------------------------------------------------- arch facts
def test_architecture_facts_are_consistent():
    assert STAGES == ("load", "compute", "store")
    assert set(QUEUES) == {"l2g", "g2l", "g2s", "s2g"} and len(TOKEN_QUEUES) == 4
    for name, (src, dst) in QUEUES.items():
        # The flag that pushes on the producer and the one that pops on the consumer both
        # name this queue; every other stage has no flag for it.
        assert DEP_FLAGS[src][push_flag(src, dst)] == name
        assert DEP_FLAGS[dst][pop_flag(src, dst)] == name
    assert sum(q is not None for s in STAGES for q in DEP_FLAGS[s].values()) == 8
    cfg = load_config("default")
    assert [elem_bytes(cfg, m) for m in MemType] == [4, 256, 16, 64, 16, 16]
    assert module_of(Load(memory_type=MemType.WGT)) == "load"
    assert module_of(Load(memory_type=MemType.ACC_8BIT)) == "compute"
    assert module_of(Store()) == "store" and module_of(Finish()) == "compute"


def test_hw_and_sim_import_the_facts():
    import hw.gemm
    import hw.queues
    import sim.functional
    import sim.timing.compute
    import sim.timing.core
    import sim.timing.queues
    from isa import arch, registers
    assert hw.queues.TOKEN_QUEUES is arch.TOKEN_QUEUES is sim.timing.queues.TOKEN_QUEUES
    assert hw.gemm.GEMM_LATENCY == sim.timing.compute.GEMM_LATENCY == arch.GEMM_LATENCY
    assert sim.timing.compute.ALU_LATENCY == arch.ALU_LATENCY
    assert sim.timing.core.COUNTERS is registers.COUNTERS is arch.COUNTERS
    assert sim.functional.DEP_QUEUES is arch.DEP_FLAGS


# ---------------------------------------------------------------------------- token rules
def test_token_rules_of_the_original_runtime():
    b = StreamBuilder("tiny")
    acc = b.parameter("acc", np.zeros((4, 1, 2), np.int32))
    out = b.output("out", (4, 1, 2), np.int8)
    b.dep_pop("store", "compute")          # pending on compute ...
    b.load_2d(MemType.ACC, 0, acc, x_size=4)   # ... attached to its next instruction
    b.dep_push("compute", "store")         # lands on the LOAD ACC (a compute instruction)
    b.dep_push("compute", "load")          # lands on it too (another flag)
    b.dep_push("compute", "load")          # the flag is taken: a compute no-op carries it
    b.dep_pop("compute", "store")
    b.dep_pop("compute", "store")          # a second pop of one direction commits a no-op
    b.dep_push("load", "compute")          # the last instruction is not load: a load no-op
    b.store_2d(0, out, x_size=4)
    kinds = [(type(i).__name__, s, deps(i)) for i, s in zip(b.instructions, b.stages)]
    assert kinds == [("Load", "compute", ".pUu"), ("Load", "compute", "..U."),
                     ("Store", "store", "P..."), ("Load", "load", "...u"),
                     ("Store", "store", "P...")]
    with pytest.raises(ProgramError, match="no token queue from load to store"):
        b.dep_push("load", "store")
    with pytest.raises(ProgramError, match="unknown stage 'fetch'"):
        b.dep_pop("fetch", "load")


def test_unbalanced_pops_are_refused_and_pushes_drained():
    b = StreamBuilder("tiny")
    b.dep_pop("load", "compute")
    b.alu(alu_kernel(AluOp.ADD, [Uop(0, 0)], imm=1))
    with pytest.raises(ProgramError, match=r"l2g \(compute pops 1 more token"):
        b.build()
    b = StreamBuilder("tiny")
    b.dep_push("compute", "load")
    b.dep_push("store", "compute")
    prog = b.build()
    image = prog.link().image(0)
    assert token_balance(image) == dict.fromkeys(QUEUES, 0)
    run_image(image)


def test_epilogue_and_finish():
    b = StreamBuilder("tiny")
    prog = b.build()                            # an empty program is the epilogue alone
    insns = list(prog.launches[0].instructions)
    assert [(type(i).__name__, module_of(i), deps(i)) for i in insns] == [
        ("Store", "store", "..U."), ("Load", "load", "...u"), ("Load", "compute", "Pp.."),
        ("Finish", "compute", "....")]
    assert insns[0].memory_type == MemType.UOP and insns[1].memory_type == MemType.INP
    with pytest.raises(ProgramError, match="already built"):
        b.dep_push("load", "compute")


# ---------------------------------------------------------------------------- micro-ops
def test_residency_eviction_and_staging():
    b = StreamBuilder("tiny")                   # 64 micro-op entries
    kernels = [alu_kernel(AluOp.ADD, [Uop(i, i) for i in range(20)], imm=n) for n in range(5)]
    for _ in range(3):
        for k in kernels:
            b.alu(k)
    assert b.uop_loads == 15 and b.uop_evictions > 0       # round robin over 5 > 3 slots
    prog = b.build()
    launch = prog.launches[0]
    loads = [(i, insn) for i, insn in enumerate(launch.instructions)
             if isinstance(insn, Load) and insn.memory_type == MemType.UOP and insn.x_size]
    assert len(loads) == 15
    relocs = dict(launch.relocs)
    assert all(relocs[i] == launch.uops for i, _ in loads)
    # Each kernel is staged once per launch (5 kernels x 20 micro-ops) at a fixed offset, and
    # the ring places them at 0, 20, 40 only.
    assert prog.region(launch.uops).nbytes == 100 * prog.config.uop_elem_bytes
    assert {insn.dram_base for _, insn in loads} == {0, 20, 40, 60, 80}
    assert {insn.sram_base for _, insn in loads} == {0, 20, 40}
    b = StreamBuilder("tiny")
    for _ in range(4):
        for k in kernels[:3]:
            b.alu(k)
    assert b.uop_loads == 3 and b.uop_evictions == 0       # resident kernels stay


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.integers(1, 24), min_size=1, max_size=8),
       st.lists(st.integers(0, 7), min_size=1, max_size=60))
def test_residency_against_a_model_of_the_sram(sizes, uses):
    """The ring cache against the micro-op SRAM itself: a kernel is resident exactly when every
    entry it was loaded into still holds it."""
    from isa.program import UopResidency
    depth = 32
    kernels = [alu_kernel(AluOp.ADD, [Uop(0, 0)] * n, imm=0) for n in sizes]
    cache, owner, where, cursor = UopResidency(depth), [None] * depth, {}, 0
    for u in uses:
        k = kernels[u % len(kernels)]
        n = len(k)
        resident = k in where and all(owner[e] is k for e in range(where[k], where[k] + n))
        if not resident:
            if cursor + n > depth:
                cursor = 0
            where[k] = cursor
            owner[cursor:cursor + n] = [k] * n
            cursor += n
        assert cache.place(k) == (where[k], not resident)


# ---------------------------------------------------------------------------- random streams
CFG = load_config("tiny")
ALU_OPS = st.sampled_from([AluOp.ADD, AluOp.MAX, AluOp.MIN, AluOp.SHR, AluOp.MUL])


@st.composite
def streams(draw):
    """Units of work: ("alu", tiles, [(op, imm)...]) or ("gemm", tiles, ...)."""
    units = []
    for _ in range(draw(st.integers(1, 9))):
        tiles = draw(st.integers(1, 4))
        if draw(st.booleans()):
            ops = draw(st.lists(st.tuples(ALU_OPS, st.integers(-6, 6)), min_size=1,
                                max_size=3))
            units.append(("alu", tiles, ops))
        else:
            units.append(("gemm", tiles, draw(st.integers(1, 3))))
    return (units, draw(st.sampled_from([None, 26, 30, 40])), draw(st.integers(0, 2**16)),
            draw(st.sampled_from(["tiny", "small", "batch2"])))


def build_stream(units, insn_capacity, seed, builder=None, cfg=CFG):
    """A program of ``units`` (each in a unit, sharing kernels by key) and what numpy says
    its outputs must be."""
    cfg = load_config(cfg)
    rng = np.random.default_rng(seed)
    b = builder or StreamBuilder(cfg, insn_capacity=insn_capacity, uop_capacity=24)
    bo, bi = cfg.block_out, cfg.block_in
    acc_host = rng.integers(-300, 300, (4, cfg.batch, bo), dtype=np.int32)
    inp_host = rng.integers(-20, 20, (3, 4, cfg.batch, bi), dtype=np.int8)
    wgt_host = rng.integers(-20, 20, (4, bo, bi), dtype=np.int8)
    acc = b.parameter("acc", acc_host)
    inp = b.parameter("inp", inp_host)
    wgt = b.parameter("wgt", wgt_host)
    expected, gemm_pending = {}, False
    for u, (kind, tiles, arg) in enumerate(units):
        out = b.output(f"out{u}", (tiles, cfg.batch, bo), np.int8)
        with b.unit():
            if u:
                b.dep_pop("store", "compute")      # the previous unit's STORE read ACC
            if kind == "alu":
                b.load_2d(MemType.ACC, 0, acc, x_size=tiles)
                val = acc_host[:tiles].astype(np.int64)
                for op, imm in arg:
                    imm = abs(imm) % 8 if op == AluOp.SHR else imm
                    k = b.kernel(("alu", op, imm, tiles), lambda: alu_kernel(
                        op, [Uop(0, 0)], [Loop(tiles, dst=1, src=1)], imm=imm))
                    b.alu(k)
                    val = alu_ref(op, val, imm)
            else:
                x = arg - 1
                if gemm_pending:
                    b.dep_pop("compute", "load")   # compute is done with INP/WGT
                b.load_2d(MemType.INP, 0, inp, x * 4, x_size=1)
                b.load_2d(MemType.WGT, 0, wgt, 0, x_size=tiles)
                b.dep_push("load", "compute")
                b.dep_pop("load", "compute")
                b.gemm(b.kernel(("reset", tiles), lambda: gemm_kernel(
                    [Uop(0, 0, 0)], [Loop(tiles, dst=1)], reset=True)))
                b.gemm(b.kernel(("gemm", tiles), lambda: gemm_kernel(
                    [Uop(0, 0, 0)], [Loop(tiles, dst=1, wgt=1)])))
                b.dep_push("compute", "load")      # left outstanding: drained at a split
                gemm_pending = True
                prod = inp_host[x, 0].astype(np.int64) @ wgt_host[:tiles].astype(np.int64) \
                    .transpose(0, 2, 1)
                val = wrap32(prod)                 # (tiles, batch, block_out)
            b.dep_push("compute", "store")
            b.dep_pop("compute", "store")
            b.store_2d(0, out, x_size=tiles)
            b.dep_push("store", "compute")
        expected[f"out{u}"] = np.asarray(val).astype(np.int32).astype(np.int8) \
            .reshape(tiles, cfg.batch, bo)
    return b, expected


@settings(max_examples=30, deadline=None, derandomize=True)
@given(streams())
def test_random_streams_split_balanced_and_compute_what_numpy_says(case):
    units, capacity, seed, config = case
    b, expected = build_stream(units, capacity, seed, cfg=config)
    prog = b.build()
    linked = prog.link()
    for k, launch in enumerate(prog.launches):
        assert isinstance(launch.instructions[-1], Finish)
        assert capacity is None or len(launch) <= capacity
        image = linked.image(k)
        # Every launch is balanced on its own and race-free.
        assert token_balance(image) == dict.fromkeys(QUEUES, 0)
        if k < 3:
            find_race(image)
    assert len(prog.launches) == 1 + b.splits
    counted = dict.fromkeys(prog.counters(), 0)

    def run_counting(image):
        result = run_image(image)
        for key in counted:
            counted[key] += result.counters[key]
        return result

    dram = linked.run(run_counting)
    assert counted == prog.counters()          # what the simulator counted, predicted
    for name, want in expected.items():
        assert np.array_equal(linked.read(name, dram), want), name


def test_a_long_stream_splits_and_tokens_cross_launches():
    units = [("gemm", 4, 1 + n % 3) for n in range(8)] + [("alu", 3, [(AluOp.ADD, 5)])] * 4
    b, expected = build_stream(units, 24, 7)
    prog = b.build()
    assert len(prog.launches) > 4 and b.splits == len(prog.launches) - 1
    # The g2l token pushed by one GEMM unit and popped by the next is drained before the
    # epilogue and pushed again at the start of the next launch.
    first = prog.launches[1].instructions[0]
    assert module_of(first) == "compute" and first.push_prev
    linked = prog.link()
    dram = linked.run(run_image)
    for name, want in expected.items():
        assert np.array_equal(linked.read(name, dram), want), name


def test_a_unit_larger_than_a_launch_is_an_error():
    b = StreamBuilder("tiny", insn_capacity=24)
    k = alu_kernel(AluOp.ADD, [Uop(0, 0)], imm=1)
    with pytest.raises(ProgramError, match="a unit does not fit in one launch"):
        with b.unit():
            for _ in range(30):
                b.alu(k)


# ---------------------------------------------------------------------------- the driver
def test_link_runs_like_the_driver_stream():
    """The same calls through driver.CommandStream (live device, its allocator, eager runs)
    and through the builder + automatic layout give the same outputs."""
    from driver import Device
    units = [("gemm", 2, 1), ("alu", 3, [(AluOp.MUL, 3), (AluOp.SHR, 1)]), ("gemm", 4, 3)]
    b, expected = build_stream(units, 30, 11)
    linked = b.build().link()
    dram = linked.run(run_image)
    # The linked images are SPEC §5 images for every backend: the cycle-accurate simulator
    # leaves the same DRAM, byte for byte.
    import sim.cycle
    assert np.array_equal(linked.run(sim.cycle.run_image), dram)

    dev = Device(CFG, dram_bytes=1 << 20)
    s = dev.stream(insn_capacity=30, uop_capacity=24)
    buffers = {}

    class Adapter:
        """The builder's region API on device buffers."""
        def __init__(self):
            self.kernel, self.unit = s.kernel, s.unit

        def parameter(self, name, arr):
            buffers[name] = dev.array(arr)
            return buffers[name]

        def output(self, name, shape, dtype):
            buffers[name] = dev.empty(shape, dtype)
            return buffers[name]

        def __getattr__(self, attr):
            return getattr(s, attr)

    build_stream(units, 30, 11, builder=Adapter())
    s.synchronize()
    assert len(s.launches) == len(linked)
    for name in expected:
        assert np.array_equal(buffers[name].read(), linked.read(name, dram)), name
        assert np.array_equal(buffers[name].read(), expected[name]), name


# ---------------------------------------------------------------------------- linking
def small_program(**kw):
    b = StreamBuilder("small", name="t", **kw)
    acc = b.parameter("acc", np.arange(16, dtype=np.int32).reshape(4, 1, 4))
    x = b.input("x", (4, 1, 4), np.int32)
    out = b.output("out", (4, 1, 4), np.int8)
    b.load_2d(MemType.ACC, 0, acc, x_size=4)
    b.load_2d(MemType.ACC, 4, x, x_size=4)
    b.alu(alu_kernel(AluOp.ADD, [Uop(0, 4)], [Loop(4, dst=1, src=1)]))
    b.dep_push("compute", "store")
    b.dep_pop("compute", "store")
    b.store_2d(0, out, x_size=4)
    return b.build()


def test_link_layouts_inputs_and_errors():
    prog = small_program()
    xs = np.full((4, 1, 4), 100, np.int32)
    auto = prog.link(inputs={"x": xs})
    want = (np.arange(16).reshape(4, 1, 4) + 100).astype(np.int8)
    assert np.array_equal(auto.read("out", auto.run(run_image)), want)
    image = auto.image(0)
    assert image.outputs[0].name == "out" and image.outputs[0].addr == auto.layout["out"]
    assert min(auto.layout.values()) > 0                 # physical 0 is never used
    # A layout of our own: regions far apart, the rest placed above them.
    fixed = prog.link({"acc": 0x4000, "out": 0x100}, inputs={"x": xs}, dram_bytes=1 << 16)
    assert fixed.layout["acc"] == 0x4000 and fixed.layout["x"] >= 0x4000 + 64
    assert fixed.dram_bytes == 1 << 16
    assert np.array_equal(fixed.read("out", fixed.run(run_image)), want)
    with pytest.raises(LinkError, match="must be a non-negative multiple of 16"):
        prog.link({"acc": 0x4008})
    with pytest.raises(LinkError, match="overlap"):
        prog.link({"acc": 0x100, "out": 0x120})
    with pytest.raises(LinkError, match=r"input 'x' must be \(4, 1, 4\) int32"):
        prog.link(inputs={"x": np.zeros(16, np.int32)})
    with pytest.raises(LinkError, match="not an input"):
        prog.link(inputs={"acc": np.zeros((4, 1, 4), np.int32)})
    with pytest.raises(LinkError, match="lies outside the DRAM"):
        prog.link(dram_bytes=64)
    with pytest.raises(LinkError, match="does not have: nope"):
        prog.link({"nope": 0})


def test_program_is_immutable():
    prog = small_program()
    with pytest.raises(AttributeError):
        prog.name = "other"
    with pytest.raises(ValueError):
        prog.region("acc").data[0] = 1
    linked = prog.link()
    with pytest.raises(TypeError):
        linked.layout["acc"] = 0
    with pytest.raises(ValueError):
        linked.dram[0] = 1
    with pytest.raises(ProgramError, match="has no region 'y'"):
        prog.region("y")
    b = StreamBuilder("tiny")
    b.scratch("s", 16)
    with pytest.raises(ProgramError, match="duplicate region name 's'"):
        b.output("s", (2,), np.int8)
    with pytest.raises(ProgramError, match="the builder makes the micro-op"):
        b.scratch("insns.0", 16)
    with pytest.raises(ProgramError, match="not a numeric dtype"):
        b.parameter("o", np.array([object()]))


# ---------------------------------------------------------------------------- files
def test_save_load_round_trip_and_dump(tmp_path):
    units = [("gemm", 4, 2), ("alu", 2, [(AluOp.MAX, -3)]), ("gemm", 3, 1)]
    b, _ = build_stream(units, 26, 3)
    prog = b.build()
    path = tmp_path / "p.npz"
    prog.save(path)
    back = load_program(path)
    assert back == prog and back.config == prog.config
    assert load_program(prog.to_bytes()) == prog
    for r in prog.regions:
        assert (r.data is None) == (back.region(r.name).data is None)
        assert r.data is None or np.array_equal(r.data, back.region(r.name).data)
    a, z = prog.link(), back.link()
    assert np.array_equal(a.dram, z.dram) and a.starts == z.starts
    text = prog.dump()
    assert "dram_base=inp+" in text and "launch 1:" in text and "parameter" in text
    assert text == back.dump()
    # Raw words and deliberately wrong programs survive too.
    b = StreamBuilder("tiny")
    b.raw((1 << 128) - 1, "compute")
    prog = b.build(check_tokens=False)
    prog.save(path)
    assert load_program(path) == prog


def test_a_corrupted_program_file_is_a_clear_error(tmp_path):
    prog = small_program()
    path = tmp_path / "p.npz"
    prog.save(path)
    raw = bytearray(path.read_bytes())
    # A flipped byte inside a stored member: the zip CRC or the checksum catches it.
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("launch0_words.npy")
    bad = tmp_path / "bad.npz"
    # Rewrite one member uncompressed with a changed instruction byte and a valid CRC.
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == info.filename:
                data = data[:-1] + bytes([data[-1] ^ 1])
            dst.writestr(item.filename, data)
    with pytest.raises(ProgramFormatError, match="does not match its SHA-256 checksum"):
        load_program(bad)
    bad.write_bytes(bytes(raw[:len(raw) // 2]))
    with pytest.raises(ProgramFormatError, match="not a saved VTA program"):
        load_program(bad)
    np.savez(bad, meta=np.str_('{"format": "vta-program", "version": 99}'))
    with pytest.raises(ProgramFormatError, match="version 99"):
        load_program(bad)
    np.savez(bad, dram=np.zeros(4, np.uint8))
    with pytest.raises(ProgramFormatError, match="no 'meta'"):
        load_program(bad)
    # Consistent checksum, inconsistent content: still a one-line format error.
    from isa.program.files import _digest, _to_arrays
    import json
    for change, message in ((lambda m, a: m["regions"][0].update(kind="weird"),
                             "unknown kind 'weird'"),
                            (lambda m, a: a.update(launch0_relocs=np.array([[0, 99]])),
                             "IndexError"),
                            (lambda m, a: m["config"].update(LOG_BATCH=-3),
                             "invalid program file")):
        arrays = _to_arrays(prog)
        meta = json.loads(str(arrays.pop("meta")))
        meta.pop("sha256")
        change(meta, arrays)
        meta["sha256"] = _digest(meta, arrays)
        np.savez(bad, meta=np.str_(json.dumps(meta)), **arrays)
        with pytest.raises(ProgramFormatError, match=message):
            load_program(bad)
    with pytest.raises(ProgramFormatError, match="no such program file"):
        load_program(tmp_path / "missing.npz")
    assert not (tmp_path / "p.npz.tmp").exists()


def test_conformance_builder_is_a_layer_over_the_program():
    from isa.conformance import conformance_programs
    progs = conformance_programs("tiny", families=("tokens",))
    for p in progs[:3]:
        insns = decode_program(p.image.instruction_bytes, p.config)
        assert isinstance(insns[-1], Finish)
        assert token_balance(p.image) == dict.fromkeys(QUEUES, 0)


def test_docs_example_runs(tmp_path, monkeypatch, capsys):
    """docs/program.md's first Python block, exactly as written."""
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs" / "program.md").read_text()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "docs/program.md", "exec"), {})
    out = capsys.readouterr().out.rstrip()
    assert out.endswith("[ 1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16]")


def test_vta_program_command(tmp_path, capsys):
    from vta.cli import main
    units = [("gemm", 4, 2), ("alu", 2, [(AluOp.ADD, 1)]), ("gemm", 3, 1)]
    b, expected = build_stream(units, 26, 5)
    prog = b.build()
    path = tmp_path / "p.npz"
    prog.save(path)
    assert main(["link", str(path), "--summary", "--images", str(tmp_path / "img")]) == 0
    out = capsys.readouterr().out
    assert "launch 1:" in out and "dram_base=" not in out and "image(s)" in out
    # The written images, run in order, compute what numpy says.
    from isa.image import load_image
    files = sorted((tmp_path / "img").glob("launch-*.npz"))
    assert len(files) == len(prog.launches) > 1
    dram = None
    for f in files:
        image = load_image(f)
        if dram is not None:
            image.dram[:] = dram
        dram = run_image(image).dram
    linked = prog.link()
    for name, want in expected.items():
        assert np.array_equal(linked.read(name, dram), want)
    path.write_bytes(b"not a zip")
    assert main(["link", str(path)]) == 2
    assert "not a saved VTA program" in capsys.readouterr().err
