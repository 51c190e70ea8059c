"""The fetch module: reads the instruction stream in bursts and dispatches it to the command queues."""

from __future__ import annotations

import itertools

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from isa.arch import STAGES as QUEUE_NAMES
from isa.config import VTAConfig
from isa.encoding import AluOp, MemType, Opcode
from isa.errors import ErrorCode

from .dma import FETCH_PREPARE_CYCLES, DmaReader
from isa import layout as _layout

from .fields import INDEX_BITS, INSN_BITS, alu_insn, gemm_insn, mem_insn, queue_entry
from .memport import MemPortSignature, StreamSlice
from .modcommon import ERR_BITS

__all__ = ["FetchModule", "HeadFIFO", "QUEUE_NAMES"]

# QUEUE_NAMES: the command queues in the order of the fetch module's outputs (the stages).


# The decode of an instruction's low half (``FetchModule._decode_early``): the queue one-hot
# unless a low-half check fails (``ok``), that failure (``bad``, ``code``), and what the high
# half's checks need (an ALU; a STORE with legal token flags, its memory type OUT or not).
_EARLY = data.StructLayout({"ok": 3, "bad": 1, "code": ERR_BITS, "alu": 1, "store_out": 1,
                            "store_other": 1})
# The fields ``_decode_early`` reads: all in the low half.
_EARLY_FIELDS = ("opcode", "pop_prev", "pop_next", "push_prev", "push_next", "memory_type",
                 "uop_bgn", "uop_end", "iter_out", "iter_in")


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
    only, not the LUT-RAM's write enable. ``r_data`` is zero while ``r_rdy`` is low, so a
    reader's test of a head field needs no ``r_rdy`` beside it (Fmax: fetch's dispatch)."""

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
        # only picks one (Fmax, §12). The counts' ±1 are made from the registers alone and
        # ``do_write`` (the reader's beat, late: the arbiter's read owner, §12 step 30) only
        # chooses among them, so no carry chain follows it.
        regs = (produce, consume, waiting, some, self.level)
        steps = {}
        for name, v in (("waiting", waiting), ("level", self.level)):
            up, down = Signal.like(v, name=f"{name}_up"), Signal.like(v, name=f"{name}_down")
            m.d.comb += [up.eq(v + 1), down.eq(v - 1)]
            steps[name] = (v, up, down)

        def step(name, inc_, dec):
            """The count ``name`` + inc_ − dec, ``inc_`` chosen last."""
            v, up, down = steps[name]
            return Mux(inc_, Mux(dec, v, up), Mux(dec, down, v))

        nexts = []
        for r in (0, 1):
            refill_r = ~self.r_rdy | r
            to_r, from_r = do_write & (some | ~refill_r), refill_r & some
            nexts.append((
                Mux(to_r, inc(produce), produce),
                Mux(from_r, inc(consume), consume),
                step("waiting", to_r, from_r),
                Mux(to_r & ~from_r, 1, Mux(from_r & ~to_r, waiting != 1, some)),
                step("level", do_write, r & self.r_rdy),
            ))
        m.d.sync += [reg.eq(Mux(self.r_en, n1, n0)) for reg, n0, n1 in zip(regs, *nexts)]
        with m.If(refill):
            with m.If(some):
                m.d.sync += [self.r_data.eq(rp.data), self.r_rdy.eq(1)]
            with m.Else():
                m.d.sync += [self.r_data.eq(Mux(do_write, self.w_data, 0)),
                             self.r_rdy.eq(do_write)]
        return m


class FetchModule(wiring.Component):
    """Streams ``insn_count`` instructions from ``insn_addr`` and routes each to its queue.

    ``start`` in cycle *c* → the :class:`~hw.dma.DmaReader` offers its first burst in *c* + 1.
    Instructions enter a buffer of 2P entries (P = instructions per full burst); a new burst is
    requested (prefetched, without waiting for the previous burst's data) only while the
    buffer's level plus P per burst in flight plus P for the new one fit in 2P, so every
    requested instruction has room and reading never stalls the read channel. The port's beats
    pass a :class:`~hw.memport.StreamSlice` before the reader (one cycle), and each instruction
    the reader completes passes one register before the buffer (one cycle; a burst is in
    flight until its last instruction is written). An instruction written into the buffer in
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
        # The decoded entry, its write and the burst's end pass one register (``w1_*``)
        # before the buffer and its bookkeeping: the placer puts fetch's reader and its
        # buffer far apart (43 rows, §12 session 21), so the route between them gets a cycle
        # of its own. An instruction reaches the buffer one cycle later; the request gate
        # counts the burst in flight until its last instruction is in the buffer, as before.
        w1_entry = Signal(entry, reset_less=True)
        w1_valid, w1_done = Signal(), Signal()
        m.d.comb += [buf.w_data.eq(w1_entry), r_entry.eq(buf.r_data)]
        # The memory's beats pass a StreamSlice before the reader and the buffer: fetch's
        # reader is placed far from both the arbiter and the buffer, and the beat's valid was
        # the critical path (route, reader, route, buffer bookkeeping; §12 session 19). Every
        # beat reaches the reader one cycle later; with a bus no wider than an instruction
        # the reader is always ready and the slice is a plain register.
        m.submodules.rd_slice = rd_slice = StreamSlice(self.port.rd.payload.shape())
        rd = reader.port.rd
        m.d.comb += [self.port.rcmd.valid.eq(reader.port.rcmd.valid),
                     self.port.rcmd.payload.eq(reader.port.rcmd.payload),
                     reader.port.rcmd.ready.eq(self.port.rcmd.ready),
                     rd_slice.i.valid.eq(self.port.rd.valid),
                     rd_slice.i.payload.eq(self.port.rd.payload),
                     self.port.rd.ready.eq(rd_slice.i.ready),
                     rd.valid.eq(rd_slice.o.valid), rd.payload.eq(rd_slice.o.payload),
                     rd_slice.o.ready.eq(rd.ready)]
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
            w_entry.word.eq(reader.out.payload), buf.w_en.eq(w1_valid & running),
            rcmd_fire.eq(self.port.rcmd.valid & self.port.rcmd.ready),
            rd_done.eq(rd.valid & rd.ready & rd.payload.last),
        ]
        m.d.sync += [w1_entry.eq(w_entry), w1_valid.eq(reader.out.valid), w1_done.eq(rd_done),
                     inflight.eq(inflight + rcmd_fire - w1_done)]
        head_bad = Signal()         # an illegal instruction at the dispatch point: fetch stops
        at_last = Signal()          # ``index == insn_count − 1`` (a register, ``_control``)
        self._request_gate(m, reader, buf, per, depth, running, head_bad, at_last, inflight,
                           rcmd_fire, w1_done)
        index = Signal(INDEX_BITS)
        m.d.comb += [self.q_data.word.eq(r_entry.word), self.q_data.index.eq(index)]
        # (Decoded from the reader's output, not from ``w_entry``: a signal that feeds its own
        # other bits is a combinational loop at signal level, which Verilator does not settle.)
        # With a 64-bit bus an instruction's low half is the reader's first beat, held in its
        # shift register while the second beat completes the element (``DmaReader``: the
        # register loads every beat): its decode is made from that beat and held beside it,
        # so only the high half's few checks lie between the second beat and the buffer
        # (Fmax). The decode of every cycle's read data is registered without an enable
        # (``early_any``; the beat's valid would join the decode's LUTs) and kept in
        # ``early_held`` in the cycle after a beat: the first beat's decode is the former
        # right after it, the latter after a gap. The high half's checks run on both, and
        # ``fired`` picks one result (one LUT input, beside the buffer's own choice).
        half = INSN_BITS // 2
        if cfg.bus_width == half:
            early_any, early_held = Signal(_EARLY), Signal(_EARLY)
            fired = Signal()            # a beat came in the cycle before
            m.d.sync += [early_any.eq(self._decode_early(m, rd.payload.data)),
                         fired.eq(rd.valid & rd.ready)]
            with m.If(fired):
                m.d.sync += early_held.eq(early_any)
            now = self._decode_late(m, early_any, reader.out.payload, "any")
            kept = self._decode_late(m, early_held, reader.out.payload, "held")
            to_w, illegal_w, code_w = (Mux(fired, a, b) for a, b in zip(now, kept))
        else:
            early = self._decode_early(m, reader.out.payload[:half])
            to_w, illegal_w, code_w = self._decode_late(m, early, reader.out.payload, "late")
        m.d.comb += [w_entry.to.eq(to_w), w_entry.illegal.eq(illegal_w), w_entry.code.eq(code_w)]
        self._control(m, reader, buf, running, run_end, head_bad, at_last, index, r_entry)
        return m

    @staticmethod
    def _request_gate(m, reader, buf, per, depth, running, head_bad, at_last, inflight,
                      rcmd_fire, burst_end):
        """The reader's ``issue_ok``: ``running`` and level + P·inflight ≤ 2P − P, kept in a
        register loaded with that condition on the next state, so it has the same value in
        every cycle as the condition on the present state (no cycle changes) but leaves a
        flip-flop: the arbiter's round robin and the memory port's handshake start from it
        (docs/hardware.md §12, step 8). The condition is "no burst in flight and level ≤ P,
        or one and the buffer empty"; it is formed for each possible step of level and
        inflight (−1, 0, +1 each) from registers: the buffer level's compares with P − 1,
        P, P + 1, 0 and 1 are flags loaded with their next values (each the present flag or
        a neighbour's), so each of the nine is one LUT of flags and ``inflight``; the steps
        (the buffer's write and ``burst_end``, registers; the late ``rcmd`` handshake through
        the arbiter and dispatch) only select one of the nine (Fmax)."""
        gate = Signal()
        m.d.comb += reader.issue_ok.eq(gate)
        level = buf.level
        # le[k]: level ≤ P + k (k = −1, 0, 1); eq[k]: level == k (k = 0, 1); all true but
        # eq[1] in the reset state (empty buffer). The comparisons one step beyond are read
        # only as the flags' next values.
        le = {k: Signal(name=f"gate_le_{k + 1}", init=1) for k in (-1, 0, 1)}
        eq = {k: Signal(name=f"gate_eq_{k}", init=k == 0) for k in (0, 1)}
        # (A write always finds room, ``w_en`` implies ``w_rdy``: every burst is requested
        # with room for all it brings. So the write step is ``w_en``: no compare of the level
        # on the late path.)
        up, down = Signal(), Signal()       # the level's step
        m.d.comb += [up.eq(buf.w_en & ~buf.r_en), down.eq(buf.r_en & ~buf.w_en)]

        def le_now(k):
            return le[k] if k in le else (level <= per + k if per + k >= 0 else 0)

        def eq_now(k):
            return eq[k] if k in eq else level == k

        for k in le:
            m.d.sync += le[k].eq(Mux(up, le_now(k - 1), Mux(down, le_now(k + 1), le[k])))
        for k in eq:
            m.d.sync += eq[k].eq(Mux(up, eq_now(k - 1) if k else 0,
                                     Mux(down, eq_now(k + 1), eq[k])))

        def count_is(v):
            return inflight == v if 0 <= v < 2 ** len(inflight) else 0

        fits = {}
        for dl in (-1, 0, 1):
            for di in (-1, 0, 1):
                f = Signal(name=f"gate_fits_{dl + 1}{di + 1}")
                empty_after = eq[-dl] if -dl in eq else 0      # level + dl == 0
                m.d.comb += f.eq(count_is(-di) & le[-dl] | count_is(1 - di) & empty_after)
                fits[dl, di] = f
        # The outcome for each value of the read command's handshake (``rcmd_fire``: the
        # latest step, through the arbiter's grant) and of dispatch (``buf.r_en``: it follows
        # the queues' ``w_rdy``), each made from the other steps; those two only select
        # (Fmax). ``running`` stays after a dispatch unless it was the last one, and without
        # one unless the head is illegal (``run_end``'s two cases).
        w, d = buf.w_en, burst_end
        stays = Signal()
        m.d.comb += stays.eq(reader.start | running & ~head_bad)
        outcome = {}
        for r, c in itertools.product((0, 1), repeat=2):
            o = Signal(name=f"gate_next_r{r}c{c}")
            fit = Mux(w, Mux(d, fits[1 - r, c - 1], fits[1 - r, c]),
                      Mux(d, fits[-r, c - 1], fits[-r, c]))
            m.d.comb += o.eq(fit & (~at_last if r else stays))
            outcome[r, c] = o
        m.d.sync += gate.eq(Mux(rcmd_fire, Mux(buf.r_en, outcome[1, 1], outcome[0, 1]),
                                Mux(buf.r_en, outcome[1, 0], outcome[0, 0])))

    def _decode_early(self, m, lo):
        """The decode's part that reads only the instruction's low half ``lo`` (bits
        0–63: opcode, token flags, memory type, GEMM/ALU loop fields), as an ``_EARLY``
        value: every check of a LOAD, GEMM or FINISH, STORE's token flags, the GEMM/ALU
        empty loop; what is left needs the high half (STORE's ``x_size`` and pads, ALU's
        opcode, ``_decode_late``). The failures exclude each other (one opcode, and a LOAD's
        token flags are checked only for a legal memory type), so each output is a flat
        AND-OR of the opcode's and memory type's decodes, with no priority chain; the zero
        tests and ``uop_end ≤ uop_bgn`` are borrows (carry chains, no LUT trees): three LUT
        levels at most (Fmax). Checks as in the functional simulator."""
        cfg = self._cfg
        for layout in (_layout.mem_layout(), _layout.gemm_layout(cfg), _layout.alu_layout(cfg)):
            for f in layout.fields:
                assert f.name not in _EARLY_FIELDS or f.offset + f.width <= len(lo), f.name
        word = Signal(INSN_BITS, name="early_word")
        m.d.comb += word.eq(lo)
        head, hg = Signal(mem_insn()), Signal(gemm_insn(cfg))
        m.d.comb += [head.eq(word), hg.eq(word)]
        op = {o: Signal(name=f"early_{o.name.lower()}") for o in Opcode}
        m.d.comb += [op[o].eq(head.opcode == o) for o in Opcode]
        mt = head.memory_type
        load_iw, load_other, out = Signal(), Signal(), Signal()
        m.d.comb += [load_iw.eq((mt == MemType.INP) | (mt == MemType.WGT)),
                     load_other.eq((mt == MemType.UOP) | (mt == MemType.ACC)
                                   | (mt == MemType.ACC_8BIT)),
                     out.eq(mt == MemType.OUT)]
        prev_flag, next_flag = head.pop_prev | head.push_prev, head.pop_next | head.push_next
        empty = Signal(name="early_empty")
        m.d.comb += empty.eq((hg.iter_out - 1)[-1] | (hg.iter_in - 1)[-1]
                             | ~(hg.uop_bgn - hg.uop_end)[-1])
        fails = {   # each failure's condition and code
            ErrorCode.ILLEGAL_DEP_FLAG: op[Opcode.LOAD] & load_iw & prev_flag
                                        | op[Opcode.STORE] & next_flag,
            ErrorCode.ILLEGAL_MEMORY_TYPE: op[Opcode.LOAD] & ~load_iw & ~load_other,
            ErrorCode.EMPTY_LOOP: (op[Opcode.GEMM] | op[Opcode.ALU]) & empty,
            ErrorCode.ILLEGAL_OPCODE: ~Cat(*op.values()).any(),
        }
        e = Signal(_EARLY, name="early_decode")
        store_ok = op[Opcode.STORE] & ~next_flag
        m.d.comb += [
            e.bad.eq(Cat(*fails.values()).any()),
            e.ok.eq(Cat(op[Opcode.LOAD] & load_iw & ~prev_flag,
                        op[Opcode.LOAD] & load_other | op[Opcode.FINISH]
                        | (op[Opcode.GEMM] | op[Opcode.ALU]) & ~empty,
                        store_ok)),
            e.alu.eq(op[Opcode.ALU]),
            e.store_out.eq(store_ok & out),
            e.store_other.eq(store_ok & ~out),
        ]
        # the code: each bit the OR of the failures whose code has it (they exclude each other)
        for bit in range(ERR_BITS):
            m.d.comb += e.code[bit].eq(Cat(*[cond for code, cond in fails.items()
                                             if code >> bit & 1]).any())
        return e

    def _decode_late(self, m, e, word, name):
        """(queue one-hot, none for a field error; field error?; its code) of the instruction
        ``word`` from ``e``, the ``_decode_early`` of its low half, and the high half's
        fields: one or two LUT levels after the borrows ``x_size ≠ 0`` and "a pad ≠ 0"."""
        head = Signal(mem_insn(), name=f"{name}_word")
        ha = Signal(alu_insn(self._cfg), name=f"{name}_alu")
        m.d.comb += [head.eq(word), ha.eq(word)]
        x_nz, pads_nz = Signal(name=f"{name}_x_nz"), Signal(name=f"{name}_pads_nz")
        pads = Cat(head.y_pad_0, head.y_pad_1, head.x_pad_0, head.x_pad_1)
        m.d.comb += [x_nz.eq(~(head.x_size - 1)[-1]), pads_nz.eq(~(pads - 1)[-1])]
        alu_bad = Signal(name=f"{name}_alu_bad")
        store_bad = Signal(name=f"{name}_store_bad")
        m.d.comb += [alu_bad.eq(e.alu & (ha.alu_opcode > max(AluOp))),
                     store_bad.eq(x_nz & (e.store_other | e.store_out & pads_nz))]
        to, illegal, code = Signal(3, name=f"{name}_to"), Signal(name=f"{name}_illegal"), \
            Signal(ERR_BITS, name=f"{name}_code")
        m.d.comb += [
            to.eq(Cat(e.ok[0], e.ok[1] & ~alu_bad, e.ok[2] & ~store_bad)),
            illegal.eq(e.bad | alu_bad | store_bad),
            code.eq(Mux(alu_bad, ErrorCode.ILLEGAL_ALU_OPCODE,
                        Mux(e.store_other, ErrorCode.ILLEGAL_MEMORY_TYPE,
                            Mux(e.store_out, ErrorCode.STORE_PADDING, e.code)))),
        ]
        return to, illegal, code

    def _control(self, m, reader, buf, running, run_end, head_bad, at_last, index, r_entry):
        """The fetch FSM: IDLE → RUN (dispatch one instruction per cycle) → END / STOPPED.

        The launch's values (present from the cycle before ``start``) are checked in
        reset-less registers loaded in every cycle, and the countdown to the last dispatch is
        loaded while not running, so no carry chain lies on the start condition or on the last
        dispatch (Fmax). ``running`` is high exactly in RUN; dispatch is decided from the
        head's registers (zero without a head), ``halt`` and the queues' ``w_rdy`` alone
        (Fmax, §12)."""
        insn_end = Signal(40)
        empty = Signal(reset_less=True)
        beyond = Signal(reset_less=True)
        m.d.comb += insn_end.eq(self.insn_addr + (self.insn_count << 4))
        # ``at_last`` (``index == insn_count − 1``) as a register set with ``index``, from a
        # down-counter ``togo`` = insn_count − 3 − index: a dispatch of index *i* ≤ count − 2
        # makes the next one the last exactly when togo < 0 (its borrow, a carry chain, no
        # 32-bit equality). ``insn_count == 0`` and ``== 1`` likewise as borrows (Fmax, §12).
        one = Signal(reset_less=True)
        togo = Signal(signed(33), reset_less=True)
        m.d.sync += [empty.eq((self.insn_count - 1)[-1]), beyond.eq(insn_end > self.dram_size),
                     one.eq(~(self.insn_count - 1)[-1] & (self.insn_count - 2)[-1])]
        with m.If(~running):
            m.d.sync += togo.eq(self.insn_count - 3)

        # The dispatch point (RUN): the head leaves into its queue, or raises its field error,
        # or waits (quiet: only a queue's room can move it).
        # (A head is present only in RUN, or in STOPPED as the illegal instruction that
        # stopped fetch, which has no queue; and the head's fields are zero without a head
        # (``HeadFIFO``): so neither ``running`` nor ``r_rdy`` joins the head's ``to`` and
        # ``illegal`` in dispatch, the stall and the field error, two inputs fewer, Fmax.)
        live = Signal()             # no halt: the head, if any, may move
        dispatch = Signal()
        m.d.comb += [
            live.eq(~self.halt),
            head_bad.eq(live & r_entry.illegal),
            dispatch.eq(live & (r_entry.to & Cat(*self.q_rdy)).any()),
            buf.r_en.eq(dispatch),
            run_end.eq(head_bad | dispatch & at_last),
            self.busy.eq(running),
            # (``to`` is one-hot for a legal head, zero for an illegal one: the head waits
            # exactly when its own queue has no room; no ``dispatch`` in the quiet test)
            self.stall.eq(live & (r_entry.to & ~Cat(*self.q_rdy)).any()),
        ]
        m.d.comb += [self.q_en[i].eq(live & r_entry.to[i] & self.q_rdy[i]) for i in range(3)]
        with m.If(dispatch):
            m.d.sync += [index.eq(index + 1), togo.eq(togo - 1), at_last.eq(togo[-1])]
        with m.If(run_end):
            m.d.sync += running.eq(0)

        # (``stall`` is low outside RUN — no head, or an illegal one —, so it is ``quiet`` in
        # RUN without the state's decode)
        m.d.comb += self.quiet.eq(self.stall)
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
