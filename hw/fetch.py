"""The fetch module: reads the instruction stream in bursts and dispatches it to the command queues."""

from __future__ import annotations

import itertools

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from isa.arch import STAGES as QUEUE_NAMES
from isa.config import VTAConfig
from isa.encoding import AluOp, MemType, Opcode
from isa.errors import ErrorCode

from .dma import FETCH_PREPARE_CYCLES, DmaReader
from .fields import INDEX_BITS, alu_insn, gemm_insn, mem_insn, queue_entry
from .memport import MemPortSignature
from .modcommon import ERR_BITS

__all__ = ["FetchModule", "HeadFIFO", "QUEUE_NAMES"]

# QUEUE_NAMES: the command queues in the order of the fetch module's outputs (the stages).


def fetch_buffer_depth(cfg: VTAConfig) -> tuple[int, int]:
    """(instructions per full burst P, instruction-buffer depth 2P)."""
    per = max(1, cfg.max_burst_beats * cfg.bus_bytes // 16)
    return per, 2 * per


class HeadFIFO(wiring.Component):
    """A first-word-fall-through FIFO of ``depth`` entries whose head is a register: the same
    ports and cycles as :class:`~amaranth.lib.fifo.SyncFIFO` (an entry written in cycle *t*
    can be read from *t* + 1; ``level`` counts the entries), but ``r_data`` and ``r_rdy``
    leave flip-flops, not the LUT-RAM's read multiplexer (Fmax: fetch's dispatch decision
    starts from them). The entries behind the head wait in a LUT-RAM ring; a write goes
    straight to the head when nothing waits there and the head is empty or leaves. The ring
    is written at its free slot in every writing cycle, whether or not the entry stays there
    (only its pointer's advance waits for the read), so the late ``r_en`` reaches registers
    only, not the LUT-RAM's write enable."""

    def __init__(self, width: int, depth: int):
        self._depth = depth
        super().__init__({
            "w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
            "r_data": Out(width), "r_en": In(1), "r_rdy": Out(1),
            "level": Out(range(depth + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        n = self._depth             # ring slots (it holds at most depth − 1: one is the head)
        m.submodules.ring = ring = Memory(shape=len(self.w_data), depth=n, init=[])
        wp, rp = ring.write_port(), ring.read_port(domain="comb")
        produce = Signal(range(n))
        consume = Signal(range(n))
        waiting = Signal(range(n + 1))      # entries in the ring
        some = Signal()                     # ``waiting != 0``, set with it
        do_write, refill = Signal(name="do_write"), Signal(name="refill")

        def inc(v):
            return Mux(v == n - 1, 0, v + 1)

        m.d.comb += [
            self.w_rdy.eq(self.level != self._depth),
            do_write.eq(self.w_en & self.w_rdy),
            refill.eq(~self.r_rdy | self.r_en),        # the head register loads this cycle
            wp.addr.eq(produce), wp.data.eq(self.w_data), wp.en.eq(do_write),
            rp.addr.eq(consume),
        ]
        # The ring's bookkeeping for each value of ``r_en`` (the latest input: fetch's dispatch
        # follows the queues' ``w_rdy``), made from the registers and ``do_write``; ``r_en``
        # only picks one (Fmax, §12).
        regs = (produce, consume, waiting, some, self.level)
        nexts = []
        for r in (0, 1):
            refill_r = ~self.r_rdy | r
            to_r, from_r = do_write & (some | ~refill_r), refill_r & some
            nexts.append((
                Mux(to_r, inc(produce), produce),
                Mux(from_r, inc(consume), consume),
                waiting + to_r - from_r,
                Mux(to_r & ~from_r, 1, Mux(from_r & ~to_r, waiting != 1, some)),
                self.level + do_write - (r & self.r_rdy),
            ))
        m.d.sync += [reg.eq(Mux(self.r_en, n1, n0)) for reg, n0, n1 in zip(regs, *nexts)]
        with m.If(refill):
            with m.If(some):
                m.d.sync += [self.r_data.eq(rp.data), self.r_rdy.eq(1)]
            with m.Else():
                m.d.sync += [self.r_data.eq(self.w_data), self.r_rdy.eq(do_write)]
        return m


class FetchModule(wiring.Component):
    """Streams ``insn_count`` instructions from ``insn_addr`` and routes each to its queue.

    ``start`` in cycle *c* → the :class:`~hw.dma.DmaReader` offers its first burst in *c* + 1.
    Instructions enter a buffer of 2P entries (P = instructions per full burst); a new burst is
    requested (prefetched, without waiting for the previous burst's data) only while the
    buffer's level plus P per burst in flight plus P for the new one fit in 2P, so every
    requested instruction has room and reading never stalls the read channel. An instruction written into the buffer in
    cycle *t* can be dispatched from *t* + 1; dispatch moves one instruction per cycle into its
    command queue (STORE → store; LOAD INP/WGT → load; LOAD UOP/ACC/ACC_8BIT, GEMM, ALU, FINISH
    → compute) and stalls while that queue is full (head-of-line). The errors that the fields
    alone reveal (illegal opcode, must-be-zero token bit, memory type, STORE padding, ALU
    opcode, empty loop) are raised when the instruction reaches the dispatch point; fetch then
    stops. Instructions after a FINISH are dispatched like any other (as the original does).
    ``insn_addr``, ``insn_count`` and ``dram_size`` are present from *c* − 1 (the launch
    cycle) and held while fetch runs.
    """

    def __init__(self, cfg: VTAConfig):
        self._cfg = cfg
        super().__init__({
            "start": In(1), "insn_addr": In(32), "insn_count": In(32), "dram_size": In(32),
            "halt": In(1),
            "q_data": Out(queue_entry()),
            "q_en": Out(1).array(3), "q_rdy": In(1).array(3),
            "err": Out(1), "err_code": Out(ERR_BITS), "err_index": Out(INDEX_BITS),
            "quiet": Out(1),           # nothing more will be dispatched without outside help
            "all_dispatched": Out(1),  # every instruction has been dispatched
            "busy": Out(1), "stall": Out(1),
            "port": Out(MemPortSignature(cfg)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        per, depth = fetch_buffer_depth(cfg)
        m.submodules.reader = reader = DmaReader(cfg, elem_bytes=16, count_bits=32,
                                                 prepare_cycles=FETCH_PREPARE_CYCLES)
        # Each buffer entry carries the instruction and its decode (queue, field error), made
        # as it enters: the dispatch point reads them from the entry, so no decode logic lies
        # between the buffer's read pointer and dispatch, the core's failure and the memory
        # arbiter's halt (docs/hardware.md §12). Timing is unchanged.
        # ``to``: the target queue one-hot, all zero for an illegal instruction, so a queue's
        # write enable is one AND of registers and that queue's ``w_rdy`` (Fmax, §12).
        entry = data.StructLayout({"word": 128, "to": 3, "illegal": 1, "code": ERR_BITS})
        m.submodules.buf = buf = HeadFIFO(width=entry.size, depth=depth)
        w_entry = Signal(entry)
        r_entry = Signal(entry)
        m.d.comb += [buf.w_data.eq(w_entry), r_entry.eq(buf.r_data)]
        wiring.connect(m, wiring.flipped(self.port), reader.port)
        running = Signal()
        run_end = Signal()          # ``running`` falls at the end of this cycle
        # Bursts requested and not yet complete: each may bring up to P instructions, so a
        # burst is requested only while the buffer has room for it and for those in flight.
        inflight = Signal(2)
        rcmd_fire = Signal()
        rd_done = Signal()
        m.d.comb += [
            reader.addr.eq(self.insn_addr), reader.count.eq(self.insn_count),
            reader.rows.eq(1), reader.stride.eq(0), reader.out.ready.eq(1),
            w_entry.word.eq(reader.out.payload), buf.w_en.eq(reader.out.valid & running),
            rcmd_fire.eq(self.port.rcmd.valid & self.port.rcmd.ready),
            rd_done.eq(self.port.rd.valid & self.port.rd.ready & self.port.rd.payload.last),
        ]
        m.d.sync += inflight.eq(inflight + rcmd_fire - rd_done)
        head_bad = Signal()         # an illegal instruction at the dispatch point: fetch stops
        at_last = Signal()          # ``index == insn_count − 1`` (a register, ``_control``)
        self._request_gate(m, reader, buf, per, depth, running, head_bad, at_last, inflight,
                           rcmd_fire, rd_done)
        index = Signal(INDEX_BITS)
        m.d.comb += [self.q_data.word.eq(r_entry.word), self.q_data.index.eq(index)]
        # (Decoded from the reader's output, not from ``w_entry``: a signal that feeds its own
        # other bits is a combinational loop at signal level, which Verilator does not settle.)
        to_w, illegal_w, code_w = self._decode(m, reader.out.payload)
        m.d.comb += [w_entry.to.eq(to_w), w_entry.illegal.eq(illegal_w), w_entry.code.eq(code_w)]
        self._control(m, reader, buf, running, run_end, head_bad, at_last, index, r_entry)
        return m

    @staticmethod
    def _request_gate(m, reader, buf, per, depth, running, head_bad, at_last, inflight,
                      rcmd_fire, rd_done):
        """The reader's ``issue_ok``: ``running`` and level + P·inflight ≤ 2P − P, kept in a
        register loaded with that condition on the next state, so it has the same value in
        every cycle as the condition on the present state (no cycle changes) but leaves a
        flip-flop: the arbiter's round robin and the memory port's handshake start from it
        (docs/hardware.md §12, step 8). The present sum is compared with one constant per
        possible step of level and inflight (−1, 0, +1 each); the late handshakes (``rcmd``
        through the arbiter, the ``rd`` beats, dispatch) only select one of the nine."""
        gate = Signal()
        m.d.comb += reader.issue_ok.eq(gate)
        held = Signal(range(depth + (2 ** len(inflight) - 1) * per + 1))
        m.d.comb += held.eq(buf.level + inflight * per)
        fits = {}
        for dl in (-1, 0, 1):
            for di in (-1, 0, 1):
                bound = depth - per - dl - di * per
                f = Signal(name=f"gate_fits_{dl + 1}{di + 1}")
                m.d.comb += f.eq(held <= bound if bound >= 0 else 0)
                fits[dl, di] = f
        # Dispatch (``buf.r_en``, the deepest of the steps: it follows the queues' ``w_rdy``)
        # only selects between the two outcomes, each made from the other steps; ``running``
        # stays after a dispatch unless it was the last one, and without one unless the head
        # is illegal (``run_end``'s two cases).
        step = Cat(buf.w_en & buf.w_rdy, rcmd_fire, rd_done)
        fits_next = [Signal(name=f"gate_fits_r{r}") for r in (0, 1)]
        with m.Switch(step):
            for w, c, d in itertools.product((0, 1), repeat=3):
                with m.Case(w | c << 1 | d << 2):
                    m.d.comb += [fits_next[r].eq(fits[w - r, c - d]) for r in (0, 1)]
        stays = Signal()
        m.d.comb += stays.eq(reader.start | running & ~head_bad)
        m.d.sync += gate.eq(Mux(buf.r_en, ~at_last & fits_next[1], stays & fits_next[0]))

    def _decode(self, m, word):
        """(queue one-hot, none for a field error; field error?; its code) of the instruction
        ``word``, combinationally, the checks in the functional simulator's order."""
        cfg = self._cfg
        head = Signal(mem_insn())
        hg = Signal(gemm_insn(cfg))
        ha = Signal(alu_insn(cfg))
        m.d.comb += [head.eq(word), hg.eq(word), ha.eq(word)]
        to = Signal(3, name="decode_to")
        illegal = Signal(name="decode_illegal")
        illegal_code = Signal(ERR_BITS, name="decode_code")
        pads = Signal()
        m.d.comb += pads.eq((head.y_pad_0 != 0) | (head.y_pad_1 != 0) | (head.x_pad_0 != 0)
                            | (head.x_pad_1 != 0))
        empty = Signal()
        m.d.comb += empty.eq((hg.iter_out == 0) | (hg.iter_in == 0) | (hg.uop_end <= hg.uop_bgn))

        def bad(code):
            m.d.comb += [illegal.eq(1), illegal_code.eq(code), to.eq(0)]

        # Routing and the static checks, in the order of the functional simulator's decoder.
        m.d.comb += to.eq(1 << 1)
        with m.Switch(head.opcode):
            with m.Case(Opcode.STORE):
                m.d.comb += to.eq(1 << 2)
                with m.If(head.pop_next | head.push_next):
                    bad(ErrorCode.ILLEGAL_DEP_FLAG)
                with m.Elif(head.x_size == 0):
                    pass
                with m.Elif(head.memory_type != MemType.OUT):
                    bad(ErrorCode.ILLEGAL_MEMORY_TYPE)
                with m.Elif(pads):
                    bad(ErrorCode.STORE_PADDING)
            with m.Case(Opcode.LOAD):
                with m.Switch(head.memory_type):
                    with m.Case(MemType.INP, MemType.WGT):
                        m.d.comb += to.eq(1 << 0)
                        with m.If(head.pop_prev | head.push_prev):
                            bad(ErrorCode.ILLEGAL_DEP_FLAG)
                    with m.Case(MemType.UOP, MemType.ACC, MemType.ACC_8BIT):
                        pass
                    with m.Default():
                        bad(ErrorCode.ILLEGAL_MEMORY_TYPE)
            with m.Case(Opcode.GEMM):
                with m.If(empty):
                    bad(ErrorCode.EMPTY_LOOP)
            with m.Case(Opcode.ALU):
                with m.If(ha.alu_opcode > max(AluOp)):
                    bad(ErrorCode.ILLEGAL_ALU_OPCODE)
                with m.Elif(empty):
                    bad(ErrorCode.EMPTY_LOOP)
            with m.Case(Opcode.FINISH):
                pass
            with m.Default():
                bad(ErrorCode.ILLEGAL_OPCODE)
        return to, illegal, illegal_code

    def _control(self, m, reader, buf, running, run_end, head_bad, at_last, index, r_entry):
        """The fetch FSM: IDLE → RUN (dispatch one instruction per cycle) → END / STOPPED.

        The launch's values (present from the cycle before ``start``) are checked and
        ``insn_count − 2`` formed in reset-less registers loaded in every cycle, so no carry
        chain lies on the start condition or on the last dispatch (Fmax). ``running`` is high
        exactly in RUN: dispatch is decided from it (one flip-flop, not the state's decode),
        the head's registers, ``halt`` and the queues' ``w_rdy`` (Fmax, §12)."""
        insn_end = Signal(40)
        empty = Signal(reset_less=True)
        beyond = Signal(reset_less=True)
        last = Signal(32, reset_less=True)
        m.d.comb += insn_end.eq(self.insn_addr + (self.insn_count << 4))
        # ``index == insn_count − 1`` as a register set with ``index`` (from ``insn_count``
        # compared with 1 and 2 in every cycle): the last dispatch reads no 32-bit compare
        one = Signal(reset_less=True)
        m.d.sync += [empty.eq(self.insn_count == 0), beyond.eq(insn_end > self.dram_size),
                     last.eq(self.insn_count - 2), one.eq(self.insn_count == 1)]

        # The dispatch point (RUN): the head leaves into its queue, or raises its field error,
        # or waits (quiet: only a queue's room can move it).
        live = Signal()             # RUN, a head present and no halt
        dispatch = Signal()
        m.d.comb += [
            live.eq(running & buf.r_rdy & ~self.halt),
            head_bad.eq(live & r_entry.illegal),
            dispatch.eq(live & (r_entry.to & Cat(*self.q_rdy)).any()),
            buf.r_en.eq(dispatch),
            run_end.eq(head_bad | dispatch & at_last),
            self.busy.eq(running),
            self.stall.eq(live & ~r_entry.illegal & ~dispatch),
        ]
        m.d.comb += [self.q_en[i].eq(live & r_entry.to[i] & self.q_rdy[i]) for i in range(3)]
        with m.If(dispatch):
            m.d.sync += [index.eq(index + 1), at_last.eq(index == last)]
        with m.If(run_end):
            m.d.sync += running.eq(0)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [index.eq(0), at_last.eq(one)]
                    with m.If(empty):
                        m.next = "END"
                    with m.Elif(beyond):
                        m.d.comb += [self.err.eq(1), self.err_code.eq(ErrorCode.DRAM_RANGE),
                                     self.err_index.eq(0)]
                        m.next = "STOPPED"
                    with m.Else():
                        m.d.comb += reader.start.eq(1)
                        m.d.sync += running.eq(1)
                        m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += self.quiet.eq(self.stall)
                with m.If(head_bad):
                    m.d.comb += [self.err.eq(1), self.err_code.eq(r_entry.code),
                                 self.err_index.eq(index)]
                    m.next = "STOPPED"
                with m.Elif(dispatch & at_last):
                    m.next = "END"
            with m.State("END"):
                m.d.comb += [self.quiet.eq(1), self.all_dispatched.eq(1)]
            with m.State("STOPPED"):
                m.d.comb += self.quiet.eq(1)
