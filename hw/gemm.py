"""The GEMM core: BATCH × BLOCK_IN × BLOCK_OUT multiply-accumulates per cycle (reference §3.4)."""

from __future__ import annotations

from amaranth.hdl import C, Cat, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa.arch import GEMM_LATENCY  # cycles from a micro-op's issue to its ACC write
from isa.config import VTAConfig

from .alu import one_hot
from .fields import gemm_insn, uop
from .dsp import RegisteredProduct
from .sram import block_ram
from .uop_loop import UopLoop, offset_widths

__all__ = ["GemmCore", "operand_buffer", "GEMM_LATENCY"]


def operand_buffer(m: Module, name: str, bits: int, depth: int, *, platform=None, init=None):
    """The INP or WGT buffer (``hw.core``), as the GEMM reads it: (write port, read port),
    the read through the block RAMs' own output register (``hw.sram.block_ram``'s
    ``out_reg``: data two cycles after the address; the GEMM's S3 registers, loaded in every
    cycle, were that register in fabric), the write registered beside the block RAMs
    (``write_reg``: WGT's element is 512 bits over 15 DP16KDs on ecp5-large; a LOAD's last
    write lands a cycle later, long before any GEMM that waits for its token reads it).
    ``init``: test benches."""
    wp, (rp,) = block_ram(m, name, shape=bits, depth=depth, out_reg=True, write_reg=True,
                          platform=platform, init=init)
    return wp, rp


class GemmCore(wiring.Component):
    """Pipelined GEMM: one micro-op per cycle sustained, sequential semantics.

    ``start`` in cycle *c* (instruction on ``insn`` in *c* − 1 and *c*, loops non-empty,
    ``uop_end ≤ uop depth``)
    → micro-op *j* (0-based, in loop order) is issued in cycle *c* + 1 + *j* and writes
    ACC[dst] in cycle *c* + 1 + *j* + ``GEMM_LATENCY`` (9); ``busy`` is high from *c* + 1 up to
    and including the cycle of the last write, so an instruction of N micro-ops keeps ``busy``
    for N + 9 cycles. Pipeline: S0 micro-op read; S1 indices = micro-op field + loop offset,
    and their range check, into registers; S2 ``err``, INP/WGT reads; S3 INP/WGT data in
    the block RAMs' output registers (``inp_rdata``/``wgt_rdata`` two cycles after the
    address, :func:`operand_buffer`); S4 the operands into the multipliers' input registers
    (``hw.dsp``); S5 products in the multipliers' output registers, ACC read; S6 products copied into fabric
    registers (a route only), ACC data in the block RAM's output register; S7 half sums
    registered, ACC operand registered (the data or forwarded); S8 operand + half sums into a
    result register; S9 write. The ACC port is the compute module's: ``acc_rdata`` is the
    data of ``acc_raddr`` two cycles later (a registered read), and a write presented on
    ``acc_w*`` lands in the block RAM a cycle later (a registered write). Every block-RAM
    output goes straight into a register, and no multiplier shares a cycle with an add, nor
    the add with the ACC write (the FPGA's critical paths before). The ACC read misses the
    writes of the five micro-ops ahead; they are forwarded as in :class:`~hw.alu.TensorAlu`,
    so back-to-back accumulation into one entry is exact at full rate. ``reset`` writes zeros
    (INP/WGT indices are not checked). An index past its buffer raises ``err`` (in S2) and
    stops issue. ``busy`` and ``err`` are registers loaded with their next values, the
    instruction's fields are taken in every idle cycle.
    """

    def __init__(self, cfg: VTAConfig):
        self._cfg = cfg
        super().__init__({
            "start": In(1), "insn": In(gemm_insn(cfg)), "busy": Out(1), "err": Out(1),
            "uop_raddr": Out(cfg.log_uop_depth), "uop_rdata": In(32),
            "inp_raddr": Out(cfg.log_inp_depth), "inp_rdata": In(cfg.inp_elem_bits),
            "wgt_raddr": Out(cfg.log_wgt_depth), "wgt_rdata": In(cfg.wgt_elem_bits),
            "acc_raddr": Out(cfg.log_acc_depth), "acc_rdata": In(cfg.acc_elem_bits),
            "acc_waddr": Out(cfg.log_acc_depth), "acc_wdata": Out(cfg.acc_elem_bits),
            "acc_wen": Out(1),
            "uop_done": Out(1),   # one pulse per executed non-reset micro-op (counter)
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        widths = offset_widths(cfg, {"dst": cfg.log_acc_depth, "src": cfg.log_inp_depth,
                                     "wgt": cfg.log_wgt_depth})
        m.submodules.loop = loop = UopLoop(cfg, widths)
        insn = self.insn
        m.d.comb += [loop.start.eq(self.start), loop.stop.eq(self.err)]
        for f in ("uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out", "dst_factor_in",
                  "src_factor_out", "src_factor_in", "wgt_factor_out", "wgt_factor_in"):
            m.d.comb += getattr(loop, f).eq(getattr(insn, f))
        reset = Signal()
        with m.If(~self.busy):     # every idle cycle: the start cycle's value stays (Fmax)
            m.d.sync += reset.eq(insn.reset)

        v1, v2, v3, a3, bad = self._front(m, loop, widths, reset)
        v, a, halves = self._products(m, v3, a3)
        v9, a9, r9, v8 = self._accumulate(m, v[7], a[5], a[7], halves, reset)
        m.d.comb += [
            self.acc_waddr.eq(a9), self.acc_wdata.eq(r9), self.acc_wen.eq(v9),
            self.uop_done.eq(v9 & ~reset),
        ]
        # busy (loop.valid or any stage valid) as a register loaded with its next value: the
        # loop runs after a start, each stage's valid is the one before it unless an error
        # clears S0–S2 (bad is the error of S2)
        m.d.sync += self.busy.eq(self.start | ((loop.valid | v1) & ~self.err) | (v2 & ~bad)
                                 | v3 | v[4] | v[5] | v[6] | v[7] | v8)
        return m

    def _front(self, m, loop, widths, reset):
        """S0 micro-op read → S1 indices (field + offset, one bit wider than both; the offset
        past its width is a flag) → S2 range check, INP/WGT reads; returns the valid bits of
        S1 … S3, S3's ACC index and S2's range flag."""
        cfg = self._cfg
        m.d.comb += self.uop_raddr.eq(loop.uop_next)   # read a cycle ahead: data in S0
        v1 = Signal()
        m.d.sync += v1.eq(loop.valid & ~self.err)
        names = ("dst", "src", "wgt")
        off1 = {n: Signal(widths[n], name=f"{n}_off1") for n in names}
        over1 = {n: Signal(name=f"{n}_over1") for n in names}
        for n in names:
            m.d.sync += [off1[n].eq(getattr(loop, f"{n}_off")),
                         over1[n].eq(getattr(loop, f"{n}_over"))]
        # S1: indices (field + offset, one bit wider than both)
        # S0's micro-op: the UOP block RAM's output register (``hw.compute.uop_buffer``), so
        # no adder follows the block RAM's latch
        u = Signal(uop(cfg))
        m.d.comb += u.eq(self.uop_rdata)
        v2 = Signal()
        idx2 = {n: Signal(widths[n] + 1, name=f"{n}2") for n in names}
        m.d.sync += v2.eq(v1 & ~self.err)
        # S1: the range check on the indices' sums, registered with them, so S2's ``err``
        # (which stops the loop) is one AND of registers: index ≥ depth (a power of two) is
        # the offset's flag or any bit above the address
        sums = {n: getattr(u, n) + off1[n] for n in names}
        for n in names:
            m.d.sync += idx2[n].eq(sums[n])
        a2, s2, w2 = idx2["dst"], idx2["src"], idx2["wgt"]
        log_depth = {"dst": cfg.log_acc_depth, "src": cfg.log_inp_depth,
                     "wgt": cfg.log_wgt_depth}
        past = {n: over1[n] | sums[n][log_depth[n]:].any() for n in names}
        bad, bad1, err = Signal(), Signal(), Signal()
        m.d.comb += bad1.eq(past["dst"] | (~reset & (past["src"] | past["wgt"])))
        # S2's err = v2 & bad, a register too (loaded with the next v2 & bad)
        m.d.sync += [bad.eq(bad1), err.eq(v1 & ~err & bad1)]
        # S2: range check, INP/WGT reads
        m.d.comb += [
            self.err.eq(err),
            self.inp_raddr.eq(s2), self.wgt_raddr.eq(w2),
        ]
        v3 = Signal()
        a3 = Signal(cfg.log_acc_depth)
        m.d.sync += [v3.eq(v2 & ~bad), a3.eq(a2)]
        return v1, v2, v3, a3, bad

    def _products(self, m, v3, a3):
        """S3 INP/WGT data in the block RAMs' output registers → S4 the operands into the
        multipliers' input registers
        → S5 products into their output registers → S6 products copied into fabric registers
        → S7 two half sums registered; returns S4's … S7's valid bits and ACC indices (by stage)
        and the half sums (a list of two per BATCH × BLOCK_OUT lane, one for BLOCK_IN 1). The block
        RAM's clock-to-output (≈ 6 ns on an ECP5) and the multiplier never share a cycle, nor
        does the multiply with a route: S4 and S6 are routes only (the DSP columns are fixed
        and a lane's operands and products cross the die: §12 sessions 14 and 17), and S7
        adds half of a lane's terms (the other half is added with the ACC operand in S8)."""
        cfg = self._cfg
        iw, ww = cfg.inp_width, cfg.wgt_width
        bi, bo, nb = cfg.block_in, cfg.block_out, cfg.batch
        x4, w4 = Signal(cfg.inp_elem_bits), Signal(cfg.wgt_elem_bits)
        v = {k: Signal(name=f"v{k}") for k in range(4, 8)}
        a = {k: Signal(cfg.log_acc_depth, name=f"a{k}") for k in range(4, 8)}
        # S3's INP/WGT data: the block RAMs' output registers (``operand_buffer``)
        m.d.comb += [x4.eq(self.inp_rdata), w4.eq(self.wgt_rdata)]
        m.d.sync += [v[4].eq(v3), a[4].eq(a3)]
        m.d.sync += [s.eq(d[k - 1]) for d in (v, a) for k, s in d.items() if k > 4]
        prods = {}
        for b in range(nb):
            for o in range(bo):
                for k in range(bi):
                    x = x4[(b * bi + k) * iw:(b * bi + k + 1) * iw].as_signed()
                    w = w4[(o * bi + k) * ww:(o * bi + k + 1) * ww].as_signed()
                    # the operand and product registers are the multiplier's own on an
                    # ECP5 (hw.dsp: latency 2)
                    mul = RegisteredProduct(iw, ww, iw + ww, is_signed=True, register="both")
                    m.submodules[f"mul_{b}_{o}_{k}"] = mul
                    m.d.comb += [mul.a.eq(x), mul.b.eq(w)]
                    p6 = Signal(signed(iw + ww), name=f"p6_{b}_{o}_{k}")
                    m.d.sync += p6.eq(mul.p.as_signed())
                    prods[b, o, k] = p6
        halves = []
        for b in range(nb):
            for o in range(bo):
                terms = [prods[b, o, k] for k in range(bi)]
                groups = [g for g in (terms[:(bi + 1) // 2], terms[(bi + 1) // 2:]) if g]
                lane = []
                for h, group in enumerate(groups):
                    s7 = Signal(signed(iw + ww + (len(group) - 1).bit_length()),
                                name=f"half7_{b}_{o}_{h}")
                    m.d.sync += s7.eq(_tree(group))
                    lane.append(s7)
                halves.append(lane)
        return v, a, halves

    def _accumulate(self, m, v7, a5, a7, halves, reset):
        """S5 ACC read → S6 ACC data in the block RAM's output register (the ACC port's
        ``out_reg``, ``hw.compute``) → S7 ACC operand registered → S8 the operand plus the
        lane's two half sums (one three-input add: Yosys's carry-save layer and one carry
        chain) into a result register → S9 write (it lands in the block RAM a cycle later:
        the ACC port's ``write_reg``); returns S9's valid, index and result, and S8's valid.
        The S5 read misses the writes of the five micro-ops ahead (newest wins): S7 takes the
        S9 result (two ahead) over the last three writes (three, four and five ahead) over
        the block RAM's data, by one-hot selects registered in S6 (the compares sit a cycle
        before the multiplexer); S8 takes the S9 result (one ahead) when S7 flagged the index
        match, so the add sits between registers behind a 2:1 multiplexer."""
        cfg = self._cfg
        aw = cfg.acc_width
        m.d.comb += self.acc_raddr.eq(a5)
        v8, v9, v10 = Signal(), Signal(), Signal()
        a8, a9, a10 = (Signal(cfg.log_acc_depth, name=n) for n in ("a8", "a9", "a10"))
        acc8, r9, last_data, last2_data, last3_data = (
            Signal(cfg.acc_elem_bits, name=n)
            for n in ("acc8", "r9", "last_data", "last2_data", "last3_data"))
        data7 = self.acc_rdata      # S6: the block RAM's output register
        # S6: who writes a6's entry last among those S7's select sees (newest wins), one-hot,
        # from index compares made a cycle ahead and registered (S5's a5 is S6's a6 then, and
        # what is in S8, S9 and the last two writes was in S7, S8, S9 and S10: no stage holds)
        writers = (("r9", v7, a7, r9), ("last", v8, a8, last_data),
                   ("last2", v9, a9, last2_data), ("last3", v10, a10, last3_data))
        choices, older = [], C(0, 1)
        for name, vk, ak, data in writers:       # newest first
            f = Signal(name=f"f_{name}")
            sel = Signal(name=f"sel7_{name}")
            m.d.sync += [f.eq(vk & (ak == a5)), sel.eq(~older & f)]
            older = older | f
            choices.append((sel, data))
        sel_data = Signal(name="sel7_data")
        m.d.sync += sel_data.eq(~older)
        hit8 = Signal()
        m.d.sync += [
            v8.eq(v7), a8.eq(a7), hit8.eq(v8 & (a8 == a7)), v10.eq(v9), a10.eq(a9),
            acc8.eq(one_hot(cfg.acc_elem_bits, [*choices, (sel_data, data7)])),
        ]
        acc_in = Signal(cfg.acc_elem_bits)
        m.d.comb += acc_in.eq(Mux(hit8, r9, acc8))
        lanes = []
        for i, lane in enumerate(halves):
            lanes.append(sum(lane, acc_in[i * aw:(i + 1) * aw].as_signed())[:aw])
        m.d.sync += [v9.eq(v8), a9.eq(a8), r9.eq(Mux(reset, 0, Cat(*lanes)))]
        # S9 writes r9; the last three writes are kept for the S7 of three to five behind.
        m.d.sync += [last_data.eq(r9), last2_data.eq(last_data), last3_data.eq(last2_data)]
        return v9, a9, r9, v8


def _tree(terms):
    """The sum of ``terms`` as a balanced tree of two-input adds."""
    while len(terms) > 1:
        terms = [terms[i] + terms[i + 1] if i + 1 < len(terms) else terms[i]
                 for i in range(0, len(terms), 2)]
    return terms[0]
