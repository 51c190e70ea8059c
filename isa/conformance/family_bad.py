"""Programs that must be rejected (SPEC §4.6), each with the ErrorCode and the index of the
instruction at fault. Every one is otherwise well-formed: a valid prefix, the bad instruction,
the runtime epilogue and FINISH, so exactly one error is possible."""

from __future__ import annotations


from ..arch import elem_bytes
from ..encoding import Alu, Gemm, Load, MemType, Store, Uop, encode
from ..errors import ErrorCode
from .builder import ProgramBuilder
from .common import rand_i32, rng_for


def _prefix(b: ProgramBuilder, seed):
    """A valid start: a uop, an ACC load, so that the bad instruction is not the first."""
    cfg = b.cfg
    data = rand_i32(rng_for(seed, b.name), (2, cfg.batch, cfg.block_out))
    ar = b.put_acc(data, "a")
    ur = b.put_uops([Uop(0, 0, 0)], "u")
    b.load(MemType.UOP, 0, ur, 1)
    b.load(MemType.ACC, 0, ar, 2)


def _bad(cfg, seed, name, error, make, *, prefix=True, description="", **build):
    b = ProgramBuilder(cfg, name)
    if prefix:
        _prefix(b, seed)
    index = make(b)
    return b.bad_program(error, index, description=description or name, **build)


def decode_errors(cfg, seed):
    progs = []
    for op in (5, 6, 7):
        word = encode(Load(memory_type=MemType.UOP, x_size=0, y_size=0, x_stride=0), cfg)
        word = (word & ~0b111) | op
        progs.append(_bad(cfg, seed, f"bad-illegal-opcode-{op}", ErrorCode.ILLEGAL_OPCODE,
                          lambda b, w=word: b.raw(w, "compute")))
    for mt in (MemType.OUT, 6, 7):
        progs.append(_bad(cfg, seed, f"bad-load-memory-type-{int(mt)}",
                          ErrorCode.ILLEGAL_MEMORY_TYPE,
                          lambda b, mt=mt: b.emit(Load(memory_type=int(mt), sram_base=0,
                                                       dram_base=0, y_size=1, x_size=1,
                                                       x_stride=1))))
    for mt in (MemType.INP, MemType.ACC, 7):
        progs.append(_bad(cfg, seed, f"bad-store-memory-type-{int(mt)}",
                          ErrorCode.ILLEGAL_MEMORY_TYPE,
                          lambda b, mt=mt: b.emit(Store(memory_type=int(mt), sram_base=0,
                                                        dram_base=b.dram_base(
                                                            b.output("y", (1,)), MemType.OUT),
                                                        y_size=1, x_size=1, x_stride=1))))
    for op in (5, 6, 7):
        progs.append(_bad(cfg, seed, f"bad-alu-opcode-{op}", ErrorCode.ILLEGAL_ALU_OPCODE,
                          lambda b, op=op: b.emit(Alu(alu_opcode=op, uop_bgn=0, uop_end=1,
                                                      use_imm=True, imm=1))))
    # must-be-zero token bits: load has no prev, store no next
    for module, flag in (("load", "pop_prev"), ("load", "push_prev"), ("store", "pop_next"),
                         ("store", "push_next")):
        def make(b, module=module, flag=flag):
            if module == "load":
                return b.emit(Load(memory_type=MemType.INP, x_size=0, y_size=0, x_stride=0,
                                   **{flag: True}))
            return b.emit(Store(memory_type=MemType.OUT, x_size=0, y_size=0, x_stride=0,
                                **{flag: True}))
        progs.append(_bad(cfg, seed, f"bad-dep-{module}-{flag.replace('_', '-')}",
                          ErrorCode.ILLEGAL_DEP_FLAG, make))
    for side, field in (("top", "y_pad_0"), ("bottom", "y_pad_1"), ("left", "x_pad_0"),
                        ("right", "x_pad_1")):
        def make(b, field=field):
            b.sync("compute", "store")
            out = b.output("y", (4,))
            return b.emit(Store(sram_base=0, dram_base=b.dram_base(out, MemType.OUT), y_size=1,
                                x_size=1, x_stride=1, pop_prev=True, **{field: 1}))
        progs.append(_bad(cfg, seed, f"bad-store-padding-{side}", ErrorCode.STORE_PADDING,
                          make))
    # empty loops
    for what, kw in (("gemm-iter-out-0", dict(iter_out=0)), ("gemm-iter-in-0", dict(iter_in=0)),
                     ("gemm-uop-end-eq-bgn", dict(uop_bgn=1, uop_end=1)),
                     ("gemm-uop-end-lt-bgn", dict(uop_bgn=3, uop_end=2))):
        progs.append(_bad(cfg, seed, f"bad-empty-loop-{what}", ErrorCode.EMPTY_LOOP,
                          lambda b, kw=kw: b.emit(Gemm(**{"uop_bgn": 0, "uop_end": 1, **kw}))))
    for what, kw in (("alu-iter-in-0", dict(iter_in=0)), ("alu-iter-out-0", dict(iter_out=0)),
                     ("alu-uop-end-eq-bgn", dict(uop_bgn=0, uop_end=0))):
        progs.append(_bad(cfg, seed, f"bad-empty-loop-{what}", ErrorCode.EMPTY_LOOP,
                          lambda b, kw=kw: b.emit(Alu(**{"uop_bgn": 0, "uop_end": 1,
                                                         "use_imm": True, "imm": 3, **kw}))))
    return progs


def range_errors(cfg, seed):
    progs = []
    ia, ii, iw, iu = cfg.acc_depth, cfg.inp_depth, cfg.wgt_depth, cfg.uop_depth
    data_cache = {}

    def region(b, mem, n):
        return b.alloc(n * elem_bytes(cfg, mem), f"src{len(b.regions)}")

    def sram_load(mem, sram, x, y=1, pad=(0, 0, 0, 0)):
        def make(b):
            r = region(b, mem, x * y)
            return b.load(mem, sram, r, x, y, x, pad)
        return make

    cases = [
        ("bad-sram-load-inp", sram_load(MemType.INP, ii - 1, 2)),
        ("bad-sram-load-wgt-padded", sram_load(MemType.WGT, iw - 2, 1, 1, (0, 0, 0, 2))),
        ("bad-sram-load-acc-2d", sram_load(MemType.ACC, ia - 3, 2, 2)),
        ("bad-sram-load-acc8-at-depth", sram_load(MemType.ACC_8BIT, ia, 1)),
        ("bad-sram-load-uop", sram_load(MemType.UOP, iu - 1, 2)),
        ("bad-sram-load-inp-ypad", sram_load(MemType.INP, ii - 2, 1, 1, (1, 1, 0, 0))),
    ]
    for name, make in cases:
        progs.append(_bad(cfg, seed, name, ErrorCode.SRAM_RANGE, make))

    def loop_case(kind, uop, iters, factors):
        def make(b):
            u = b.put_uops([uop], "bad_uop")
            b.load(MemType.UOP, 1, u, 1)
            if kind == "gemm":
                return b.gemm(1, 2, iters, *factors)
            if kind == "alu-vec":
                return b.alu("ADD", 1, 2, iters, *factors)
            return b.alu("MAX", 1, 2, iters, *factors, imm=0)
        return make

    loop_cases = [
        ("bad-sram-gemm-dst", "gemm", Uop(ia - 1, 0, 0), (1, 2), ((0, 1), (0, 0), (0, 0))),
        ("bad-sram-gemm-src", "gemm", Uop(0, ii - 2, 0), (2, 1), ((0, 0), (2, 0), (0, 0))),
        ("bad-sram-gemm-wgt", "gemm", Uop(0, 0, iw - 1), (2, 2), ((0, 0), (0, 0), (0, 1))),
        ("bad-sram-alu-dst", "alu-imm", Uop(ia - 2, ia - 2, 0), (3, 1), ((1, 0), (1, 0))),
        ("bad-sram-alu-src", "alu-vec", Uop(0, ia - 1, 0), (1, 2), ((0, 0), (0, 1))),
    ]
    for name, kind, uop, iters, factors in loop_cases:
        progs.append(_bad(cfg, seed, name, ErrorCode.SRAM_RANGE,
                          loop_case(kind, uop, iters, factors)))

    def store_sram(b):
        b.sync("compute", "store")
        out = b.output("y", (2,))
        return b.store(ia - 1, out, 2)
    progs.append(_bad(cfg, seed, "bad-sram-store", ErrorCode.SRAM_RANGE, store_sram))

    # DRAM range: a transfer whose last element lies past the end of DRAM. The DRAM size is
    # known only after layout, so each program is built twice (the size does not change).
    def dram_case(name, mem, x, y, past_rows):
        def build(dram_end_elems):
            b = ProgramBuilder(cfg, name)
            _prefix(b, seed)
            if mem == MemType.OUT:
                b.sync("compute", "store")
                base = dram_end_elems - x + 1 if dram_end_elems else 0
                idx = b.store(0, None, x, y, x, dram_base=base)
            else:
                stride = x if not past_rows else (dram_end_elems // max(1, y - 1) + 1
                                                  if dram_end_elems else 0)
                base = (dram_end_elems - x + 1) if (dram_end_elems and not past_rows) else 0
                idx = b.load(mem, 0, None, x, y, stride, dram_base=base)
            return b, idx
        b, _ = build(0)
        size = b.build().dram.size
        b, idx = build(size // elem_bytes(cfg, mem))
        prog = b.bad_program(ErrorCode.DRAM_RANGE, idx, description=name)
        assert prog.image.dram.size == size, name
        return prog

    progs.append(dram_case("bad-dram-load-inp-just-past", MemType.INP, 2, 1, False))
    progs.append(dram_case("bad-dram-load-acc-just-past", MemType.ACC, 1, 1, False))
    progs.append(dram_case("bad-dram-load-wgt-just-past", MemType.WGT, 1, 1, False))
    progs.append(dram_case("bad-dram-load-uop-just-past", MemType.UOP, 3, 1, False))
    progs.append(dram_case("bad-dram-load-acc-2d-stride", MemType.ACC, 1, 2, True))
    progs.append(dram_case("bad-dram-store-just-past", MemType.OUT, 2, 1, False))

    def huge(b):
        return b.load(MemType.INP, 0, None, 1, dram_base=0xFFFFFFFF)
    progs.append(_bad(cfg, seed, "bad-dram-load-huge-base", ErrorCode.DRAM_RANGE, huge))
    return progs


def token_errors(cfg, seed):
    progs = []

    def circular(b):
        # load waits for g2l, which compute pushes only after it got l2g from load
        i = b.noop("load", pop_next=True, push_next=True)
        b.noop("compute", pop_prev=True, push_prev=True)
        return i
    progs.append(_bad(cfg, seed, "bad-deadlock-load-compute", ErrorCode.DEADLOCK, circular))

    def circular_store(b):
        out = b.output("y", (1,))
        i = b.store(0, out, 1, pop_prev=True, push_prev=True)
        b.noop("compute", pop_next=True, push_next=True)
        return i
    progs.append(_bad(cfg, seed, "bad-deadlock-compute-store", ErrorCode.DEADLOCK,
                      circular_store))

    def never_pushed(b):
        return b.alu("ADD", 0, 1, imm=1, pop_next=True)    # s2g: no store ever pushes
    progs.append(_bad(cfg, seed, "bad-deadlock-pop-never-pushed", ErrorCode.DEADLOCK,
                      never_pushed, epilogue=False))

    depth = cfg.token_queue_depth

    def overflow(b):
        for _ in range(depth):
            b.noop("compute", push_next=True)
        return b.noop("compute", push_next=True)
    progs.append(_bad(cfg, seed, "bad-token-overflow-g2s", ErrorCode.TOKEN_OVERFLOW, overflow,
                      prefix=False))

    # missing FINISH: the stream just ends (reported at its last instruction)
    b = ProgramBuilder(cfg, "bad-missing-finish")
    _prefix(b, seed)
    b.alu("ADD", 0, 1, imm=1)
    b.epilogue()
    n = len(b.insns)
    progs.append(b.bad_program(ErrorCode.MISSING_FINISH, n - 1, epilogue=False, finish=False))
    return progs


def programs(cfg, seed):
    return decode_errors(cfg, seed) + range_errors(cfg, seed) + token_errors(cfg, seed)
