"""The compute module: LOAD UOP/ACC/ACC_8BIT, GEMM, ALU and FINISH; owns the UOP and ACC buffers."""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa.arch import HEAD_SETTLE, elem_bytes
from isa.config import VTAConfig
from isa.encoding import MemType, Opcode
from isa.errors import ErrorCode

from .alu import TensorAlu, one_hot
from .dma import TensorLoader
from .extent import mem_range_checks
from .fields import INDEX_BITS, alu_insn, gemm_insn, mem_insn
from .gemm import GemmCore
from .modcommon import error_index, module_members, mux_ports, raise_error, start_decision
from .sram import block_ram

__all__ = ["ComputeModule", "acc_buffer", "narrow", "uop_buffer"]

# The head decode's two register stages (ComputeModule._head_decode) settle before a start.
assert HEAD_SETTLE >= 3


def narrow(cfg: VTAConfig, acc_value):
    """The OUT element of an ACC element: the low OUT-width bits of every lane (SPEC §4.2)."""
    aw, ow = cfg.acc_width, cfg.out_width
    return Cat(*[acc_value[i * aw:i * aw + ow] for i in range(cfg.batch * cfg.block_out)])


def _sext(v, width):
    return Cat(v, v[-1].replicate(width - len(v)))


def acc_buffer(m: Module, cfg: VTAConfig, *, platform=None, init=None):
    """The ACC buffer ``acc_buf`` (``hw.sram.block_ram``): (write port, [dst read port, src
    read port]). Reads through the block RAMs' own output registers (data two cycles after
    the address; the GEMM's and the ALU's data registers, loaded in every cycle, were those
    registers in fabric, and the block RAM's clock-to-output and a route across the die into
    them were ecp5-large's worst endpoints, docs/hardware.md §12 session 22); writes
    registered beside the block RAMs, so a write lands a cycle after it is presented (the
    GEMM and the ALU forward it). ``init``: test benches."""
    return block_ram(m, "acc_buf", shape=cfg.acc_elem_bits, depth=cfg.acc_depth, reads=2,
                     out_reg=True, write_reg=True, platform=platform, init=init)


def uop_buffer(m: Module, cfg: VTAConfig, *, platform=None, init=None):
    """The UOP buffer ``uop_buf``: (write port, read port), the read through the block RAM's
    own output register with its own enable (``out_en``): the GEMM's and the ALU's S0
    micro-op register ``u`` (the block RAM's clock-to-output and a route into ``u`` were
    ecp5-large's worst path at 100 MHz, §12 session 22). ``init``: test benches."""
    wp, (rp,) = block_ram(m, "uop_buf", shape=32, depth=cfg.uop_depth, out_reg=True,
                          out_en=True, platform=platform, init=init)
    return wp, rp


class ComputeModule(wiring.Component):
    """Executes the compute queue in order, one instruction at a time.

    Cycle *s* (IDLE, head visible, l2g token if ``pop_prev`` and s2g token if ``pop_next``):
    start — the queue entry and the tokens are popped, the checks run and the unit starts:
    LOAD UOP/ACC/ACC_8BIT → a :class:`~hw.dma.TensorLoader` (LOADING until its ``busy`` is low),
    GEMM → :class:`~hw.gemm.GemmCore`, ALU → :class:`~hw.alu.TensorAlu` (RUN until ``busy`` is
    low: N + ``GEMM_LATENCY`` resp. N + ``ALU_LATENCY`` + the ALU's stalls cycles for N
    micro-ops). One RETIRE cycle then pushes g2l (``push_prev``) and g2s (``push_next``); a FINISH signals ``finish``
    in its RETIRE cycle.
    FINISH and no-ops (``x_size == 0``) take two cycles (START, RETIRE).
    Every write of ACC also writes the narrowed value into OUT (``out_w*``), so the OUT buffer
    always equals the low OUT-width bits of ACC.
    """

    def __init__(self, cfg: VTAConfig):
        self._cfg = cfg
        super().__init__({
            **module_members(cfg),
            "l2g_avail_next": In(1), "s2g_avail_next": In(1),
            "pop_l2g": Out(1), "pop_s2g": Out(1), "push_g2l": Out(1), "push_g2s": Out(1),
            "g2l_overflow": In(1), "g2s_overflow": In(1),
            "finish": Out(1),
            "inp_raddr": Out(cfg.log_inp_depth), "inp_rdata": In(cfg.inp_elem_bits),
            "wgt_raddr": Out(cfg.log_wgt_depth), "wgt_rdata": In(cfg.wgt_elem_bits),
            "out_waddr": Out(cfg.log_acc_depth), "out_wdata": Out(cfg.out_elem_bits),
            "out_wen": Out(1),
            "gemm_uop": Out(1), "alu_uop": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        uop_w, uop_r = uop_buffer(m, cfg, platform=platform)
        acc_w, (acc_ra, acc_rb) = acc_buffer(m, cfg, platform=platform)

        m.submodules.ld_uop = ld_uop = TensorLoader(cfg, elem_bytes=cfg.uop_elem_bytes,
                                                    sram_bits=32, addr_bits=cfg.log_uop_depth)
        m.submodules.ld_acc = ld_acc = TensorLoader(cfg, elem_bytes=cfg.acc_elem_bytes,
                                                    sram_bits=cfg.acc_elem_bits,
                                                    addr_bits=cfg.log_acc_depth)
        acc8_bytes = elem_bytes(cfg, MemType.ACC_8BIT)
        m.submodules.ld_acc8 = ld_acc8 = TensorLoader(
            cfg, elem_bytes=acc8_bytes, sram_bits=cfg.acc_elem_bits,
            addr_bits=cfg.log_acc_depth,
            transform=lambda v: Cat(*[_sext(v[8 * i:8 * i + 8], cfg.acc_width)
                                      for i in range(acc8_bytes)]))
        m.submodules.gemm = gemm = GemmCore(cfg)
        m.submodules.alu = alu = TensorAlu(cfg)

        word = self.head.word
        # the UOP read address in a start cycle relies on this (below)
        assert gemm_insn(cfg)["uop_bgn"].offset == alu_insn(cfg)["uop_bgn"].offset
        head = Signal(mem_insn())
        hg = Signal(gemm_insn(cfg))
        ha = Signal(alu_insn(cfg))
        m.d.comb += [head.eq(word), hg.eq(word), ha.eq(word)]
        opcode = Signal(3)
        m.d.comb += opcode.eq(head.opcode)

        # the running LOAD's memory type, one-hot: the memory port's selects are registers
        # (set with the start, §12: the port handshake's first gate reads a flip-flop)
        port_sel = {t: Signal(name=f"port_{t.name.lower()}")
                    for t in (MemType.UOP, MemType.ACC, MemType.ACC_8BIT)}
        is_gemm = Signal()
        insn = Signal(mem_insn())  # header bits of the running instruction
        index = Signal(INDEX_BITS)
        is_finish = Signal()

        # Loaders share the module's memory port.
        mux_ports(m, self.port, [(port_sel[MemType.UOP], ld_uop.port),
                                 (port_sel[MemType.ACC], ld_acc.port),
                                 (port_sel[MemType.ACC_8BIT], ld_acc8.port)])
        m.d.comb += [ld_uop.insn.eq(head), ld_acc.insn.eq(head), ld_acc8.insn.eq(head),
                     gemm.insn.eq(hg), alu.insn.eq(ha)]

        # Buffers.
        m.d.comb += [
            uop_w.addr.eq(ld_uop.wr_addr), uop_w.data.eq(ld_uop.wr_data),
            uop_w.en.eq(ld_uop.wr_en),
            # the units read a cycle ahead, in their start cycle too, where is_gemm still
            # holds the instruction before: both units' loops are idle then, and an idle
            # loop's address is its instruction's uop_bgn, the same bits of the head for
            # both (asserted above), so one multiplexer selected by a register suffices
            uop_r.addr.eq(Mux(is_gemm, gemm.uop_raddr, alu.uop_raddr)),
            gemm.uop_rdata.eq(uop_r.data), alu.uop_rdata.eq(uop_r.data),
            # the output register (the units' S0 micro-op) holds while the ALU stalls; the
            # GEMM never holds, and the ALU's stall is low while it does not run
            uop_r.out_en.eq(~alu.uop_hold),
            acc_ra.addr.eq(Mux(is_gemm, gemm.acc_raddr, alu.acc_raddr)),
            gemm.acc_rdata.eq(acc_ra.data), alu.acc_rdata.eq(acc_ra.data),
            acc_rb.addr.eq(alu.src_raddr), alu.src_rdata.eq(acc_rb.data),
            self.inp_raddr.eq(gemm.inp_raddr), gemm.inp_rdata.eq(self.inp_rdata),
            self.wgt_raddr.eq(gemm.wgt_raddr), gemm.wgt_rdata.eq(self.wgt_rdata),
            self.gemm_uop.eq(gemm.uop_done), self.alu_uop.eq(alu.uop_done),
        ]
        self._acc_write(m, acc_w, insn, [ld_acc, ld_acc8], gemm, alu)

        # Range checks of the LOADs at the head (pipelined while the entry sits there).
        checks = mem_range_checks(m, head, dram_size=self.dram_size, padded=True, kinds={
            MemType.UOP: (cfg.uop_elem_bytes, cfg.uop_depth),
            MemType.ACC: (cfg.acc_elem_bytes, cfg.acc_depth),
            MemType.ACC_8BIT: (acc8_bytes, cfg.acc_depth)})

        error_index(m, self, self.head.index, index)
        units = self._head_decode(m, head, hg, ha, checks)
        go = Signal()
        # The units' starts: ``go`` and registered decodes of the head (Fmax, §12 step 17).
        m.d.comb += [ld_uop.start.eq(go & units["ld_uop"]), ld_acc.start.eq(go & units["ld_acc"]),
                     ld_acc8.start.eq(go & units["ld_acc8"]), gemm.start.eq(go & units["gemm"]),
                     alu.start.eq(go & units["alu"])]
        with m.FSM() as fsm:
            with m.State("IDLE"):
                m.d.comb += self.idle.eq(1)
                with m.If(go):
                    # the outcomes exclude each other (_head_decode): no priority chain; a
                    # start error stays in IDLE (raised below)
                    with m.If(units["retire"]):
                        m.next = "RETIRE"
                    with m.If(units["loading"]):
                        m.next = "LOADING"
                    with m.If(units["run"]):
                        m.next = "RUN"
            with m.State("LOADING"):
                with m.If(~ld_uop.busy & ~ld_acc.busy & ~ld_acc8.busy):
                    m.next = "RETIRE"
            with m.State("RUN"):
                with m.If(gemm.err | alu.err):
                    raise_error(m, self, ErrorCode.SRAM_RANGE)
                with m.Elif(~gemm.busy & ~alu.busy):
                    m.next = "RETIRE"
            with m.State("RETIRE"):
                m.d.comb += [self.push_g2l.eq(insn.push_prev), self.push_g2s.eq(insn.push_next),
                             self.finish.eq(is_finish)]
                with m.If((insn.push_prev & self.g2l_overflow)
                          | (insn.push_next & self.g2s_overflow)):
                    raise_error(m, self, ErrorCode.TOKEN_OVERFLOW)
                m.next = "IDLE"
        # The start's pops, registers and errors, outside the FSM: ``go`` (``ready``) implies
        # IDLE (start_decision), so they are ``go`` and a gate of registers, not behind the
        # state's decode (Fmax)
        with m.If(go):
            m.d.comb += [self.pop_l2g.eq(head.pop_prev), self.pop_s2g.eq(head.pop_next)]
            m.d.sync += [insn.eq(head), index.eq(self.head.index),
                         is_finish.eq(opcode == Opcode.FINISH),
                         *[sel.eq(head.memory_type == t) for t, sel in port_sel.items()],
                         is_gemm.eq(opcode == Opcode.GEMM)]
        with m.If(go & units["sram_bad"]):
            raise_error(m, self, ErrorCode.SRAM_RANGE)
        with m.If(go & units["dram_bad"]):
            raise_error(m, self, ErrorCode.DRAM_RANGE)
        m.d.comb += go.eq(start_decision(
            m, self, retire=fsm.ongoing("RETIRE"),
            needs=[(head.pop_prev, self.l2g_avail_next), (head.pop_next, self.s2g_avail_next)]))
        return m

    def _head_decode(self, m, head, hg, ha, checks):
        """What the head instruction does if it starts now: one-hot among the units it starts
        (``ld_uop``, ``ld_acc``, ``ld_acc8``, ``gemm``, ``alu``), ``loading`` (a LOAD that
        starts), ``run`` (a GEMM or an ALU that starts), ``retire`` (a FINISH or a LOAD with
        ``x_size == 0``: straight to RETIRE) and its start error (``sram_bad``, ``dram_bad``:
        SRAM before DRAM). Each outcome's own test is one register of the head, two cycles
        late (it sits there ``HEAD_SETTLE`` ≥ 3 cycles before it starts; stage A decodes its
        fields, stage B joins them): a LOAD of type t with ``x_size ≠ 0``
        (``head_load_<t>``), a GEMM or ALU in range, a FINISH or an empty LOAD, an opcode out
        of range; the range checks' last stage (registered too) joins them in one gate per
        flag, so each unit's start is ``go`` and a gate (Fmax, §12). The outcomes (retire,
        loading, run, sram_bad, dram_bad) exclude each other, one is always high."""
        cfg = self._cfg
        opcode = head.opcode
        # stage A: the head's fields decoded, one compare each
        is_load, nonempty, gemm_in, alu_in, other = (Signal(name=f"head_a_{n}") for n in (
            "load", "nonempty", "gemm_in", "alu_in", "other"))
        mt = {t: Signal(name=f"head_a_{t.name.lower()}") for t in checks}
        m.d.sync += [is_load.eq(opcode == Opcode.LOAD), nonempty.eq(head.x_size != 0),
                     gemm_in.eq((opcode == Opcode.GEMM) & (hg.uop_end <= cfg.uop_depth)),
                     alu_in.eq((opcode == Opcode.ALU) & (ha.uop_end <= cfg.uop_depth)),
                     other.eq((opcode != Opcode.LOAD) & (opcode != Opcode.GEMM)
                              & (opcode != Opcode.ALU)),      # FINISH
                     *[sig.eq(head.memory_type == t) for t, sig in mt.items()]]
        # stage B: each unit's test, one gate of stage A
        load = {t: Signal(name=f"head_load_{t.name.lower()}") for t in checks}
        load_other = Signal()   # a LOAD of another type (fetch routes none here): no unit
        gemm_ok, alu_ok, run, retire, op_bad = (Signal(name=f"head_{n}") for n in (
            "gemm_ok", "alu_ok", "run_ok", "retire_ok", "op_bad"))
        m.d.sync += [*[load[t].eq(is_load & nonempty & mt[t]) for t in checks],
                     load_other.eq(is_load & nonempty & ~Cat(*mt.values()).any()),
                     gemm_ok.eq(gemm_in), alu_ok.eq(alu_in), run.eq(gemm_in | alu_in),
                     retire.eq((is_load & ~nonempty) | other),
                     op_bad.eq(~is_load & ~other & ~gemm_in & ~alu_in)]
        ok = {t: load[t] & ~sram & ~dram for t, (sram, dram) in checks.items()}
        units = {"ld_uop": ok[MemType.UOP], "ld_acc": ok[MemType.ACC],
                 "ld_acc8": ok[MemType.ACC_8BIT], "gemm": gemm_ok, "alu": alu_ok,
                 "run": run, "retire": retire,
                 "loading": Cat(*ok.values(), load_other).any(),
                 "sram_bad": Cat(*[load[t] & sram for t, (sram, _d) in checks.items()],
                                 op_bad).any(),
                 "dram_bad": Cat(*[load[t] & ~sram & dram
                                   for t, (sram, dram) in checks.items()]).any()}
        out = {}
        for name, value in units.items():
            sig = Signal(name=f"head_{name}")
            m.d.comb += sig.eq(value)
            out[name] = sig
        return out

    def _acc_write(self, m, acc_w, insn, loaders, gemm, alu):
        """The ACC write port (and OUT's, the narrowed value). One unit writes at a time (the
        module runs an instruction to its last write before it starts the next), so the
        address and data are chosen by one-hot registers decoded from ``insn`` (loaded in the
        start cycle *s*, decoded in *s* + 1), not by the units' write enables. A loader's
        write (through its reader's handshake) is registered and lands a cycle late: its
        first is in *s* + 2 at the earliest, its last at least two cycles before the next
        instruction's start (RETIRE between) and three before any read of ACC, so no cycle
        count moves; the GEMM's and the ALU's writes come from their result registers. A
        loader's data register takes its element (``wr_raw``) in every cycle, with no clear
        term (the reader's handshake is deep: Fmax, §12); a pad write's zero comes from its
        select, ``acc_ld<k>_keep`` (the loader's ``sel`` and "not a pad"), registered beside
        it."""
        cfg = self._cfg
        is_load = insn.opcode == Opcode.LOAD
        flags = [is_load & (insn.memory_type == MemType.ACC),
                 is_load & (insn.memory_type == MemType.ACC_8BIT),
                 insn.opcode == Opcode.GEMM, insn.opcode == Opcode.ALU]
        sel = [Signal(name=f"acc_w_sel{k}") for k in range(len(flags))]
        m.d.sync += [s.eq(f) for s, f in zip(sel, flags)]
        units, enables = [], [gemm.acc_wen, alu.acc_wen]
        data_sel = list(sel)
        for k, ld in enumerate(loaders):
            en, addr, data = (Signal(len(p), name=f"acc_ld{k}_{n}") for n, p in (
                ("en", acc_w.en), ("addr", acc_w.addr), ("data", acc_w.data)))
            # the loader's writes come from s + 2 on, when ``sel[k]`` already holds
            keep = Signal(name=f"acc_ld{k}_keep")
            m.d.sync += [en.eq(ld.wr_en), addr.eq(ld.wr_addr), data.eq(ld.wr_raw),
                         keep.eq(sel[k] & ~ld.wr_pad)]
            units.append((addr, data))
            enables.append(en)
            data_sel[k] = keep
        units += [(gemm.acc_waddr, gemm.acc_wdata), (alu.acc_waddr, alu.acc_wdata)]
        m.d.comb += [
            acc_w.addr.eq(one_hot(cfg.log_acc_depth, [(s, a) for s, (a, _) in zip(sel, units)])),
            acc_w.data.eq(one_hot(cfg.acc_elem_bits,
                                  [(s, d) for s, (_, d) in zip(data_sel, units)])),
            acc_w.en.eq(Cat(*enables).any()),
            self.out_waddr.eq(acc_w.addr), self.out_wdata.eq(narrow(cfg, acc_w.data)),
            self.out_wen.eq(acc_w.en),
        ]
