"""The memory port of the core: one request/response protocol and the arbiter behind it.

Protocol (all signals in the ``sync`` domain; a handshake happens in a cycle where ``valid`` and
``ready`` are both high at the rising edge). Reads and writes have their own channels, as AXI4
has (``rcmd`` ≙ AR, ``rd`` ≙ R, ``wcmd`` ≙ AW, ``wr`` ≙ W, ``wr_ack`` ≙ B):

* ``rcmd`` (initiator → memory): a read burst, ``addr`` (byte address, aligned to the bus
  width) and ``len`` (beats − 1, at most ``cfg.max_burst_beats − 1``; a burst never crosses a
  ``max_burst_beats × bus_bytes`` boundary, hence never a 4 KiB one).
* ``rd`` (memory → initiator): one beat per handshake, ``data`` and ``last``. Beats come in
  address order and bursts in the order of their ``rcmd`` handshakes (in-order responses).
* ``wcmd`` (initiator → memory): a write burst, ``addr`` and ``len`` as for ``rcmd``.
* ``wr`` (initiator → memory): the ``len + 1`` beats of each write burst in ``wcmd`` order,
  ``data``, ``strb`` (byte enables) and ``last``. A burst's beats follow its ``wcmd``
  handshake (from the next cycle on).
* ``wr_ack`` (memory → initiator): a one-cycle pulse per write burst, in order, when it is
  committed.

Several bursts may be in flight: a new ``rcmd`` may be handed over while earlier read bursts'
data is still to come, a new ``wcmd`` before earlier writes are acknowledged, and reads and
writes proceed independently. The core never has more than ``cfg.mem_outstanding`` read
bursts (``rcmd`` handshake to last ``rd`` beat) nor more than that many write bursts (``wcmd``
handshake to ``wr_ack``) in flight; a memory may accept fewer by holding ``ready`` low.

The core's ``rd.ready`` is a register: it takes a read beat into a one-beat buffer whenever
that is empty, possibly before the client the beat is for can take it, and then holds
``rd.ready`` low until the client has taken it (the memory may see a beat accepted, and a burst
end, earlier than the client does).
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from isa.config import VTAConfig

__all__ = ["ADDR_BITS", "LEN_BITS", "MemPortSignature", "MemArbiter", "CLIENTS",
           "READ_CLIENTS", "StreamSlice", "MemPortSlice"]

ADDR_BITS = 32
LEN_BITS = 8

#: The core's memory clients, in the order of the arbiter's inputs.
CLIENTS = ("fetch", "load", "compute", "store")
#: The clients that read (round-robin on ``rcmd``); the store is the only writer.
READ_CLIENTS = CLIENTS[:3]


def _wrap_inc(v, n: int):
    """``(v + 1) mod n`` for a counter below ``n``."""
    return 0 if n == 1 else Mux(v == n - 1, 0, v + 1)


def cmd_layout() -> data.StructLayout:
    return data.StructLayout({"addr": unsigned(ADDR_BITS), "len": unsigned(LEN_BITS)})


class MemPortSignature(wiring.Signature):
    """The port as seen by its initiator (a DMA engine or the arbiter's output)."""

    def __init__(self, cfg: VTAConfig):
        self._cfg = cfg
        w = cfg.bus_width
        super().__init__({
            "rcmd": Out(stream.Signature(cmd_layout())),
            "rd": In(stream.Signature(data.StructLayout({"data": unsigned(w),
                                                         "last": unsigned(1)}))),
            "wcmd": Out(stream.Signature(cmd_layout())),
            "wr": Out(stream.Signature(data.StructLayout({"data": unsigned(w),
                                                          "strb": unsigned(w // 8),
                                                          "last": unsigned(1)}))),
            "wr_ack": In(1),
        })

    def __eq__(self, other):
        return isinstance(other, MemPortSignature) and self._cfg == other._cfg

    def __repr__(self):
        return f"MemPortSignature({self._cfg.name})"


class MemArbiter(wiring.Component):
    """Per-command round-robin arbiter of the read clients; the store's write channels pass.

    Reads: each client's ``rcmd`` passes a :class:`StreamSlice` of its own first (the
    client's handshake is with it; a command handed over in *t* is at the arbiter from
    *t* + 1), and below "client" means that slice's output. The client holding the grant (a
    one-hot register) is connected to the memory's
    ``rcmd`` in a cycle where ``halt`` is low and fewer than ``cfg.mem_outstanding`` read
    bursts are in flight. The grant holds while its client requests without a handshake;
    otherwise the next cycle's grant is the first client with ``rcmd.valid`` in this cycle in
    the order ``ptr, ptr+1, …`` (mod 3; fetch 0, load 1, compute 2), a handshake setting
    ``ptr`` to the next client. So no ``valid`` reaches another client's ``ready``; a client
    that starts requesting waits a cycle more, one that keeps requesting is granted back to
    back, and none waits for more than two other commands. The granted client's number is
    queued (a FIFO of
    ``mem_outstanding`` entries) and the ``rd`` beats go to the client at the head, which is
    popped with the ``last`` beat's handshake (the client at the head is kept one-hot in a
    register, so ``rd.valid`` reaches the client through one LUT; its next value is selected
    by the handshakes from register values). The memory's ``rd`` passes a one-beat skid buffer
    first: ``mem.rd.ready`` is high while it is empty (a register); a beat the client does not
    take in its cycle is parked there and offered again from the next cycle, before the
    memory's next beat. The beats then reach each client through a :class:`StreamSlice` of
    its own: a beat handed to client *i*'s slice in cycle *t* (while the slice's skid
    register is empty: that is the arbiter's ``ready``) is offered to the client from
    *t* + 1, and the tag is popped when the ``last`` beat enters the slice. Writes: the store's ``wcmd`` (while ``halt`` is low), ``wr`` and ``wr_ack`` are
    connected straight through. ``idle`` is high when no read or write burst is in flight (the
    ``mem_busy`` counter counts the other cycles).
    """

    def __init__(self, cfg: VTAConfig):
        self._cfg = cfg
        self._n = len(READ_CLIENTS)
        super().__init__({
            "clients": In(MemPortSignature(cfg)).array(len(CLIENTS)),
            "mem": Out(MemPortSignature(cfg)),
            "halt": In(1),
            "idle": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        n, depth = self._n, self._cfg.mem_outstanding
        readers = self.clients[:n]
        writer = self.clients[n]
        ptr = Signal(range(n))
        # One signal per tag, named without brackets: an array-layout signal ``tags`` next to
        # its elements' wires ``tags[i]`` makes Yosys 0.70's ABC9 reintegration (which names
        # bit i of ``tags`` "tags[i]") connect a 2-bit wire to a 1-bit one and abort on some
        # configurations (1×2×2 with 512-entry buffers).
        tags = Array(Signal(2, name=f"tag{i}") for i in range(depth))
        head = Signal(range(depth))
        tail = Signal(range(depth))
        reads = Signal(range(depth + 1))
        writes = Signal(range(depth + 1))
        # ``reads != depth``, ``reads == 0`` and ``reads == 1`` as registers, chosen by the
        # handshakes among compares of this cycle's ``reads``: ``rcmd``'s ``ready`` and the
        # ``owner`` register's next value read no compare (Fmax)
        reads_room = Signal(init=1)
        reads_zero = Signal(init=1)
        reads_one = Signal()
        m.d.comb += self.idle.eq(reads_zero & (writes == 0))

        # Read commands: a registered grant (one-hot ``gnt``) picks the client connected to
        # the memory's ``rcmd``, so no client's ``valid`` reaches another's ``ready``. The
        # grant holds while its client waits; otherwise it is re-picked for the next cycle:
        # the first requester from ``ptr`` on (round robin, ``ptr`` after this cycle's
        # handshake).
        # Each client's commands pass a StreamSlice of its own first (``rcmd_slice<i>``): the
        # arbiter's requests and payloads are registers beside it, and a client's ``ready`` is
        # its slice's (a register). A client's ``valid`` crossed the die into the grant, the
        # bursts-in-flight count and the board slice's skid (§12 session 21).
        cmd_in = []
        for i in range(n):
            m.submodules[f"rcmd_slice{i}"] = sl = StreamSlice(cmd_layout())
            m.d.comb += [sl.i.valid.eq(readers[i].rcmd.valid),
                         sl.i.payload.eq(readers[i].rcmd.payload),
                         readers[i].rcmd.ready.eq(sl.i.ready)]
            cmd_in.append(sl.o)
        req = Signal(n)
        gnt = Signal(n)
        winner = Signal(range(n))
        for i in range(n):
            m.d.comb += req[i].eq(cmd_in[i].valid)
            with m.If(gnt[i]):
                m.d.comb += [winner.eq(i), self.mem.rcmd.payload.eq(cmd_in[i].payload)]
        can_read = Signal()
        waiting = Signal()          # the granted client requests
        open_ = Signal()            # a request of the granted client is taken now
        m.d.comb += [can_read.eq(~self.halt & reads_room), waiting.eq((gnt & req).any()),
                     open_.eq(can_read & self.mem.rcmd.ready),
                     self.mem.rcmd.valid.eq(can_read & waiting)]
        for i in range(n):
            m.d.comb += cmd_in[i].ready.eq(can_read & gnt[i] & self.mem.rcmd.ready)
        rcmd_fire = Signal()
        rd_done = Signal()
        # Read data: a one-beat skid buffer between the memory and the clients, so that the
        # memory's ``rd.ready`` is a register (``~skid_valid``) and no client's ``ready``
        # reaches the memory (Fmax: the memory sits across the die, §12). The clients see the
        # stream ``rd_valid``/``rd_data``/``rd_ready``: the parked beat first, else the
        # memory's. The skid copies the memory's payload in every cycle it is empty (read only
        # once ``skid_valid`` is set, in a cycle it copies): its enable is a register.
        skid = Signal.like(self.mem.rd.payload)
        skid_valid = Signal()
        rd_valid, rd_ready = Signal(), Signal()
        rd_data = Signal.like(self.mem.rd.payload)
        m.d.comb += [self.mem.rd.ready.eq(~skid_valid),
                     rd_valid.eq(skid_valid | self.mem.rd.valid),
                     rd_data.eq(Mux(skid_valid, skid.as_value(), self.mem.rd.payload.as_value()))]
        with m.If(~skid_valid):
            m.d.sync += skid.eq(self.mem.rd.payload)
        m.d.sync += skid_valid.eq(rd_valid & ~rd_ready)
        # (``open_`` is made of registers on a board, the memory's ``ready`` a slice's: the
        # clients' late ``valid`` then passes ``waiting`` and one gate)
        m.d.comb += [rcmd_fire.eq(open_ & waiting),
                     rd_done.eq(rd_valid & rd_ready & rd_data.last)]
        # The next grant: held while its client waits, else the first requester from the
        # pointer after this cycle's handshake. Both picks (from ``ptr``, and from the winner's
        # successor, the pointer after a handshake) are made from the requests in parallel,
        # so the handshake only chooses between them (Fmax).
        def pick(start, name):
            first = Signal(n, name=name)
            with m.Switch(start):
                for p in range(n):
                    with m.Case(p):
                        order = [(p + j) % n for j in range(n)]
                        for j, i in enumerate(order):
                            cond = req[i]
                            for k in order[:j]:
                                cond = cond & ~req[k]
                            m.d.comb += first[i].eq(cond)
            return first

        after_fire = Signal(range(n))
        m.d.comb += after_fire.eq(_wrap_inc(winner, n))
        pick_hold, pick_fire = pick(ptr, "pick_hold"), pick(after_fire, "pick_fire")
        # (the grant's next value with ``waiting`` as the last choice: a waiting client's
        # handshake depends on registers only, ``open_``)
        m.d.sync += gnt.eq(Mux(waiting, Mux(open_, pick_fire, gnt), pick_hold))
        with m.If(rcmd_fire):
            m.d.sync += [ptr.eq(after_fire), tail.eq(_wrap_inc(tail, depth))]
        # The tag slot at ``tail`` is free while there is room (the queue holds the bursts
        # ``head .. tail − 1``), so it takes the winner in every such cycle and keeps it when
        # the handshake advances ``tail``: its enable is a register, not the handshake (Fmax).
        with m.If(reads_room):
            m.d.sync += tags[tail].eq(winner)
        with m.If(rd_done):
            m.d.sync += head.eq(_wrap_inc(head, depth))

        # Read data to the client at the head of the queue. Which client that is (none while
        # no read is in flight) is kept one-hot in a register, so the memory's ``rd.valid``
        # passes one AND gate to the client. Its next value is chosen by the late handshakes
        # from values of this cycle's registers: a new burst that becomes the head (the queue
        # empty, or its one entry ending) takes the winner's one-hot grant, an ending burst
        # hands over to the next tag, otherwise the owner holds.
        owner = Signal(n)
        after = Signal(n)           # one-hot of the tag behind the head
        fresh = Signal()            # a burst granted now would be at the head next cycle
        m.d.comb += [after.eq(1 << tags[_wrap_inc(head, depth)]),
                     fresh.eq(reads_zero | rd_done & reads_one)]
        with m.Switch(Cat(rcmd_fire, rd_done)):
            with m.Case(0b01):
                m.d.sync += [reads_room.eq(reads != depth - 1), reads_zero.eq(0),
                             reads_one.eq(reads_zero)]
            with m.Case(0b10):
                m.d.sync += [reads_room.eq(1), reads_zero.eq(reads_one),
                             reads_one.eq(reads == 2)]
        reads_up, reads_down = Signal.like(reads), Signal.like(reads)
        m.d.comb += [reads_up.eq(reads + 1), reads_down.eq(reads - 1)]
        # (a fresh head is the granted client's, if its command fires now: as ``gnt`` is
        # one-hot, bit i of ``rcmd_fire & gnt`` is ``open_ & gnt[i] & req[i]``, which reads
        # client i's ``valid`` alone and not the OR of every client's across the die: Fmax,
        # docs/hardware.md §12 step 31)
        fired = Signal(n)
        m.d.comb += fired.eq(Cat(open_ & gnt[i] & req[i] for i in range(n)))
        m.d.sync += [reads.eq(Mux(rcmd_fire, Mux(rd_done, reads, reads_up),
                                  Mux(rd_done, reads_down, reads))),
                     owner.eq(Mux(fresh, fired, Mux(rd_done, after, owner)))]
        # Each client's beats then pass a StreamSlice of its own (``rd_slice<i>``): the client
        # sees them one cycle later, from registers, and its ``ready`` reaches the slice only
        # (the slice's ``i.ready`` is a register). The arbiter's ``owner`` and skid copies and
        # the client's reader lie far apart on ecp5-large; a register at each end of that route
        # took every arbiter path off the slow list (docs/hardware.md §12 session 19).
        into = []
        for i in range(n):
            m.submodules[f"rd_slice{i}"] = sl = StreamSlice(readers[i].rd.payload.shape())
            m.d.comb += [readers[i].rd.valid.eq(sl.o.valid),
                         readers[i].rd.payload.eq(sl.o.payload),
                         sl.o.ready.eq(readers[i].rd.ready)]
            into.append(sl.i)
        # Each slice sees the stream through its own copies of ``skid_valid`` and of its
        # ``owner`` bit (the same values: the same recurrences from the same reset; a copy's
        # next value reads the copy itself, so Yosys keeps one per client): its valid gate and
        # payload multiplexer can be placed by the client, and no single flip-flop selects
        # them across the die (Fmax, §12 steps 29–30: ``owner`` → fetch's buffer was both
        # seeds' worst path). ``owner`` itself routes the clients' ``ready`` back.
        for i in range(n):
            seen = Signal(name=f"skid_valid_{i}", attrs={"keep": 1})
            mine = Signal(name=f"owner_{i}", attrs={"keep": 1})
            m.d.sync += [seen.eq((seen | self.mem.rd.valid) & ~rd_ready),
                         mine.eq(Mux(fresh, fired[i], Mux(rd_done, after[i], mine)))]
            m.d.comb += into[i].payload.eq(
                Mux(seen, skid.as_value(), self.mem.rd.payload.as_value()))
            m.d.comb += into[i].valid.eq(mine & (seen | self.mem.rd.valid))
            with m.If(owner[i]):
                m.d.comb += rd_ready.eq(into[i].ready)

        # Writes: the store's channels straight through.
        m.d.comb += [
            self.mem.wcmd.valid.eq(writer.wcmd.valid & ~self.halt),
            self.mem.wcmd.payload.eq(writer.wcmd.payload),
            writer.wcmd.ready.eq(self.mem.wcmd.ready & ~self.halt),
            self.mem.wr.valid.eq(writer.wr.valid), self.mem.wr.payload.eq(writer.wr.payload),
            writer.wr.ready.eq(self.mem.wr.ready), writer.wr_ack.eq(self.mem.wr_ack),
        ]
        wcmd_fire = Signal()
        m.d.comb += wcmd_fire.eq(self.mem.wcmd.valid & self.mem.wcmd.ready)
        # The count's next value chosen by the late handshake between values made from
        # registers (``wr_ack`` is one on a board), as ``reads``' (Fmax)
        writes_ack, writes_fire = Signal.like(writes), Signal.like(writes)
        m.d.comb += [writes_ack.eq(Mux(self.mem.wr_ack, writes - 1, writes)),
                     writes_fire.eq(Mux(self.mem.wr_ack, writes, writes + 1))]
        m.d.sync += writes.eq(Mux(wcmd_fire, writes_fire, writes_ack))
        return m


class StreamSlice(wiring.Component):
    """A register slice (skid buffer) on one stream: every output is a register.

    ``o.valid``/``o.payload`` come from the main register, ``i.ready`` is high while the skid
    register is empty, so no combinational path crosses the slice in either direction. A beat
    handed over on ``i`` in cycle *t* is offered on ``o`` from *t* + 1; one beat per cycle
    passes while ``o`` is ready (back to back, no bubble).
    """

    def __init__(self, layout):
        super().__init__({"i": In(stream.Signature(layout)), "o": Out(stream.Signature(layout))})

    def elaborate(self, platform):
        m = Module()
        i, o = self.i, self.o
        skid = Signal.like(i.payload)
        skid_valid = Signal()
        m.d.comb += i.ready.eq(~skid_valid)
        # The skid register copies the input in every cycle it is empty (it is read only once
        # ``skid_valid`` is set, and that is set in a cycle it copies), so its 64-bit enable
        # is a register and the late ``o.ready``/``i.valid`` reach ``skid_valid`` alone
        # (Fmax: the core's ``rd.ready`` arrives deep, §12).
        with m.If(~skid_valid):
            m.d.sync += skid.eq(i.payload)
        with m.If(o.ready | ~o.valid):              # the main register moves
            with m.If(skid_valid):
                m.d.sync += [o.payload.eq(skid), o.valid.eq(1), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [o.payload.eq(i.payload), o.valid.eq(i.valid)]
        with m.Elif(i.valid & ~skid_valid):         # the main register holds: park the beat
            m.d.sync += skid_valid.eq(1)
        return m


class MemPortSlice(wiring.Component):
    """The memory port through registers: ``up`` (from the core) to ``down`` (to a memory).

    ``rcmd``, ``wcmd``, ``wr`` and ``rd`` each pass a :class:`StreamSlice` (one cycle later,
    full throughput); ``wr_ack`` is registered (one cycle later). The protocol holds on both
    sides: the slice only delays, it never reorders. A board puts it between the core and its
    memory so that no path runs from the core's arbiter into the memory's block RAM.
    """

    def __init__(self, cfg: VTAConfig):
        self._cfg = cfg
        super().__init__({"up": In(MemPortSignature(cfg)), "down": Out(MemPortSignature(cfg))})

    def elaborate(self, platform):
        m = Module()
        for name, src, dst in (("rcmd", self.up, self.down), ("wcmd", self.up, self.down),
                               ("wr", self.up, self.down), ("rd", self.down, self.up)):
            up_s, down_s = getattr(src, name), getattr(dst, name)
            m.submodules[name] = sl = StreamSlice(up_s.payload.shape())
            m.d.comb += [sl.i.valid.eq(up_s.valid), sl.i.payload.eq(up_s.payload),
                         up_s.ready.eq(sl.i.ready),
                         down_s.valid.eq(sl.o.valid), down_s.payload.eq(sl.o.payload),
                         sl.o.ready.eq(down_s.ready)]
        m.d.sync += self.up.wr_ack.eq(self.down.wr_ack)
        return m
