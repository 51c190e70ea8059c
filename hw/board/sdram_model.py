"""A behavioural SDR SDRAM chip (simulation only): what the board's SDRAM controller talks to in
the board simulation, in place of the ULX3S's MT48LC16M16.

It executes the commands on its pins as a chip does (ACTIVE, READ, WRITE with or without auto
precharge, PRECHARGE one/all, AUTO REFRESH, LOAD MODE REGISTER, NOP/DESELECT; burst length 1;
CAS latency 2 or 3 from the mode register) and checks the controller against the datasheet:
the first broken rule latches its :class:`Violation` code in ``violation`` (with the cycle in
``violation_cycle``) and the board bench fails the run on it.

Only ``rows`` rows of each bank are backed by memory (the simulation's DRAM is small); an
access to a row beyond them is a violation too (``ROW_OUTSIDE_MODEL``), never a silent alias.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["Violation", "ChipTimings", "SdramChipModel", "SdramPinsSignature"]


class Violation(enum.IntEnum):
    """What the controller did wrong (the first one is kept)."""

    NONE = 0
    BEFORE_INIT = 1        # ACTIVE before the mode register and two refreshes
    BANK_IDLE = 2          # READ/WRITE to a bank with no open row
    BANK_OPEN = 3          # ACTIVE to an open bank; REFRESH/LOAD MODE with a bank open
    T_RCD = 4              # READ/WRITE too soon after ACTIVE
    T_RP = 5               # ACTIVE/REFRESH/LOAD MODE too soon after a (auto) precharge
    T_RAS = 6              # PRECHARGE too soon after ACTIVE
    T_RC = 7               # ACTIVE too soon after the bank's last ACTIVE
    T_WR = 8               # PRECHARGE too soon after a WRITE
    T_RFC = 9              # a command too soon after AUTO REFRESH
    T_MRD = 10             # a command too soon after LOAD MODE REGISTER
    REFRESH_LATE = 11      # no AUTO REFRESH for longer than 9 × tREFI
    ROW_OUTSIDE_MODEL = 12
    BAD_MODE = 13          # burst length other than 1, CAS latency other than 2 or 3
    DQ_CONFLICT = 14       # the controller drives DQ while the chip drives read data
    CKE_LOW = 15           # a command while CKE is low


@dataclass(frozen=True)
class ChipTimings:
    """Datasheet minimums in clock cycles (``from_ns`` rounds up)."""

    rcd: int
    rp: int
    ras: int
    rc: int
    wr: int
    rfc: int
    mrd: int
    refi: int

    @classmethod
    def from_ns(cls, clk_hz: float, *, rcd, rp, ras, wr, rfc, refi, mrd_cycles=2):
        def cyc(ns):
            return max(1, math.ceil(ns * clk_hz / 1e9 - 1e-9))
        return cls(rcd=cyc(rcd), rp=cyc(rp), ras=cyc(ras), rc=cyc(ras + rp), wr=cyc(wr),
                   rfc=cyc(rfc), mrd=mrd_cycles, refi=int(refi * clk_hz / 1e9))


class SdramPinsSignature(wiring.Signature):
    """An SDR SDRAM chip's pins seen from the controller, DQ split into o/oe/i."""

    def __init__(self, addr_bits=13, bank_bits=2, dq_bits=16):
        super().__init__({"a": Out(addr_bits), "ba": Out(bank_bits), "cs_n": Out(1, init=1),
                          "cke": Out(1), "ras_n": Out(1, init=1), "cas_n": Out(1, init=1),
                          "we_n": Out(1, init=1), "dm": Out(dq_bits // 8),
                          "dq_o": Out(dq_bits), "dq_oe": Out(1), "dq_i": In(dq_bits)})


class SdramChipModel(wiring.Component):
    """The chip: ``nbanks`` banks of ``rows`` backed rows of ``ncols`` 16-bit words."""

    def __init__(self, timings: ChipTimings, *, nbanks=4, rows=8192, ncols=512):
        for what, n in (("banks", nbanks), ("rows", rows), ("columns", ncols)):
            if n < 1 or n & (n - 1):
                raise ValueError(f"SDRAM model: {what} = {n} must be a power of two")
        self.timings, self.nbanks, self.rows, self.ncols = timings, nbanks, rows, ncols
        super().__init__({"pins": In(SdramPinsSignature()),
                          "violation": Out(range(len(Violation))),
                          "violation_cycle": Out(32)})

    def elaborate(self, platform):
        m = Module()
        t, pins = self.timings, self.pins
        cycle = Signal(32)
        m.d.sync += cycle.eq(cycle + 1)
        errors = []                     # (condition, Violation) in priority order

        cmd = self._decode(m, errors)
        open_, row = self._banks(m, cmd, errors)
        self._data(m, cmd, open_, row, errors)
        self._refresh(m, cmd, errors)

        with m.If(self.violation == 0):
            for cond, code in reversed(errors):       # the first listed wins
                with m.If(cond):
                    m.d.sync += [self.violation.eq(code), self.violation_cycle.eq(cycle)]
        return m

    # -- commands ----------------------------------------------------------------------------

    def _decode(self, m, errors):
        """One-hot command flags of this cycle; the mode register; CKE and tRFC/tMRD checks."""
        pins, t = self.pins, self.timings
        sel = ~pins.cs_n
        code = Cat(pins.we_n, pins.cas_n, pins.ras_n)
        cmd = {name: Signal(name=f"cmd_{name}") for name in
               ("act", "read", "write", "pre", "ref", "mrs", "any")}
        m.d.comb += [cmd["act"].eq(sel & (code == 0b011)), cmd["read"].eq(sel & (code == 0b101)),
                     cmd["write"].eq(sel & (code == 0b100)), cmd["pre"].eq(sel & (code == 0b010)),
                     cmd["ref"].eq(sel & (code == 0b001)), cmd["mrs"].eq(sel & (code == 0b000)),
                     cmd["any"].eq(sel & (code != 0b111))]
        self.cl = cl = Signal(2)
        self.mode_set = mode_set = Signal()
        wait = Signal(range(max(t.rfc, t.mrd) + 2))   # cycles until the next command may come
        last_ref = Signal()                            # whether ``wait`` counts tRFC
        m.d.sync += wait.eq(Mux(wait != 0, wait - 1, 0))
        errors.append((cmd["any"] & ~pins.cke, Violation.CKE_LOW))
        errors.append((cmd["any"] & (wait > 1) & last_ref, Violation.T_RFC))
        errors.append((cmd["any"] & (wait > 1) & ~last_ref, Violation.T_MRD))
        with m.If(cmd["ref"]):
            m.d.sync += [wait.eq(t.rfc), last_ref.eq(1)]
        with m.If(cmd["mrs"]):
            m.d.sync += [wait.eq(t.mrd), last_ref.eq(0), mode_set.eq(1),
                         cl.eq(pins.a[4:6])]
            errors.append((cmd["mrs"] & ((pins.a[:3] != 0) | ~pins.a[4:7].matches(2, 3)),
                           Violation.BAD_MODE))
        return cmd

    def _banks(self, m, cmd, errors):
        """Per bank: the open row and one countdown per rule (tRC, tRP, tRCD, tRAS, tWR). A
        countdown set to N by a command allows the command it guards N cycles later: it is
        still above 1 before that."""
        pins, t = self.pins, self.timings
        ap = pins.a[10]
        open_ = [Signal(name=f"open{b}") for b in range(self.nbanks)]
        row = [Signal(len(pins.a), name=f"row{b}") for b in range(self.nbanks)]
        refs = Signal(2)                              # refreshes since power-up, up to 2
        m.d.sync += refs.eq(Mux(cmd["ref"] & (refs != 2), refs + 1, refs))
        errors.append((cmd["act"] & (~self.mode_set | (refs != 2)), Violation.BEFORE_INIT))
        any_open, precharging = Signal(), Signal()
        errors.append(((cmd["ref"] | cmd["mrs"]) & any_open, Violation.BANK_OPEN))
        errors.append(((cmd["ref"] | cmd["mrs"]) & precharging, Violation.T_RP))
        busy = []
        for b in range(self.nbanks):
            limit = max(t.ras, t.wr) + t.rp + t.rc + 2
            rc, rp, rcd, ras, wr = (Signal(range(limit + 1), name=f"t{n}{b}")
                                    for n in ("rc", "rp", "rcd", "ras", "wr"))
            for w in (rc, rp, rcd, ras, wr):
                m.d.sync += w.eq(Mux(w != 0, w - 1, 0))
            busy.append(rp > 1)
            here = pins.ba == b
            act, rw = cmd["act"] & here, (cmd["read"] | cmd["write"]) & here
            pre = cmd["pre"] & (here | ap) & open_[b]          # PRECHARGE of a closed bank: NOP
            errors += [(act & open_[b], Violation.BANK_OPEN),
                       (act & (rp > 1), Violation.T_RP),
                       (act & (rc > 1), Violation.T_RC),
                       (rw & ~open_[b], Violation.BANK_IDLE),
                       (rw & (rcd > 1), Violation.T_RCD),
                       (pre & (ras > 1), Violation.T_RAS),
                       (pre & (wr > 1), Violation.T_WR)]
            # After a READ/WRITE with auto precharge the chip precharges by itself as soon as
            # tRAS (and after a write tWR) allows; the bank then needs tRP before an ACTIVE.
            start = Signal(range(limit + 1), name=f"ap_start{b}")
            m.d.comb += start.eq(Mux(ras > 1, ras, 1))
            with m.If(act):
                m.d.sync += [open_[b].eq(1), row[b].eq(pins.a), rc.eq(t.rc), rcd.eq(t.rcd),
                             ras.eq(t.ras)]
            with m.Elif(pre):
                m.d.sync += [open_[b].eq(0), rp.eq(t.rp)]
            with m.Elif(cmd["write"] & here):
                m.d.sync += wr.eq(t.wr)
                with m.If(ap):
                    m.d.sync += [open_[b].eq(0), rp.eq(Mux(start > t.wr, start, t.wr) + t.rp)]
            with m.Elif(cmd["read"] & here & ap):
                m.d.sync += [open_[b].eq(0), rp.eq(start + t.rp)]
        m.d.comb += [any_open.eq(Cat(*open_).any()), precharging.eq(Cat(*busy).any())]
        return open_, row

    # -- data --------------------------------------------------------------------------------

    def _data(self, m, cmd, open_, row, errors):
        """Writes land in the cycle of the command (``dm`` masks bytes); a READ's word is on
        ``dq_i`` CAS-latency cycles after the command, for one cycle."""
        pins = self.pins
        nb, nr, nc = self.nbanks, self.rows, self.ncols
        row_bits, col_bits = (nr - 1).bit_length(), (nc - 1).bit_length()
        m.submodules.mem = mem = Memory(shape=16, depth=nb * nr * nc, init=[])
        wp = mem.write_port(granularity=8)
        rp = mem.read_port()
        open_row = Signal.like(row[0])
        with m.Switch(pins.ba):
            for b in range(nb):
                with m.Case(b):
                    m.d.comb += open_row.eq(row[b])
        addr = Signal(len(wp.addr))
        parts = [pins.a[:col_bits]] if col_bits else []
        parts += [open_row[:row_bits]] if row_bits else []
        parts += [pins.ba] if nb > 1 else []
        m.d.comb += addr.eq(Cat(*parts))
        access = cmd["read"] | cmd["write"]
        errors.append((access & (open_row >= nr), Violation.ROW_OUTSIDE_MODEL))
        m.d.comb += [wp.addr.eq(addr), wp.data.eq(pins.dq_o),
                     wp.en.eq(Mux(cmd["write"] & (open_row < nr), ~pins.dm, 0))]
        # CAS latency 2: the address is presented one cycle after the command (the read port
        # adds the second); CAS latency 3: two cycles after.
        stage = [Signal.like(addr, name=f"rd_addr{i}") for i in range(2)]
        valid = [Signal(name=f"rd_valid{i}") for i in range(2)]
        m.d.sync += [stage[0].eq(addr), valid[0].eq(cmd["read"]),
                     stage[1].eq(stage[0]), valid[1].eq(valid[0])]
        driving = Signal()
        use3 = self.cl == 3
        m.d.comb += [rp.addr.eq(Mux(use3, stage[1], stage[0])),
                     rp.en.eq(Mux(use3, valid[1], valid[0]))]
        m.d.sync += driving.eq(rp.en)
        m.d.comb += pins.dq_i.eq(Mux(driving, rp.data, 0))
        errors.append((driving & pins.dq_oe, Violation.DQ_CONFLICT))

    def _refresh(self, m, cmd, errors):
        """After the first AUTO REFRESH, the next must come within 9 × tREFI (8 postponed)."""
        limit = 9 * self.timings.refi
        since = Signal(range(limit + 2))
        started = Signal()
        with m.If(cmd["ref"]):
            m.d.sync += [since.eq(0), started.eq(1)]
        with m.Elif(started & (since <= limit)):
            m.d.sync += since.eq(since + 1)
        errors.append((started & (since > limit), Violation.REFRESH_LATE))
