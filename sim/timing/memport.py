"""The memory port: the deterministic memory model behind it and the round-robin arbiter.

Twin of ``hw/memport.py`` (``MemArbiter``) and ``hw/memmodel.py`` (``MemoryModel`` without
backpressure), timing only: the data moves through :mod:`sim.functional`'s semantics.
"""

from __future__ import annotations

from collections import deque

from isa.config import VTAConfig

__all__ = ["MemoryTiming", "MemArbiter", "MemoryViolation", "CLIENTS", "SliceTiming"]

#: The memory clients, as in ``hw.memport.CLIENTS`` (the first three read, the store writes).
CLIENTS = ("fetch", "load", "compute", "store")


class MemoryViolation(AssertionError):
    """The core broke the memory-port protocol (range, alignment, burst size or 4 KiB rule)."""


class MemoryTiming:
    """``hw.memmodel.MemoryModel`` (latency ``LAT``, ``N`` bursts in flight per direction, a
    beat every ``K`` cycles): a read burst accepted in *t* may deliver from *t* + LAT, bursts
    in order, one beat per handshake; the oldest write burst takes beats from its *t* + 1, and
    its last beat in *u* → ``wr_ack`` in *u* + LAT; after any beat in *c* the next moves from
    *c* + K (K > 1: on a conflict the channel that did not move last goes). ``rcmd_ready``
    while fewer than N reads are in flight, ``wcmd_ready`` while fewer than N writes are
    unacknowledged.
    """

    def __init__(self, cfg: VTAConfig, dram_size: int):
        self.latency = cfg.mem_latency
        self.n = cfg.mem_outstanding
        self.k = cfg.mem_beat_interval
        self.bb = cfg.bus_bytes
        self.mb = cfg.max_burst_beats
        self.dram_size = dram_size
        self.reads = deque()      # [beats left, first cycle, beats] per read burst in flight
        self.writes = deque()     # the same per write burst still taking data
        self.acks = deque()       # cycle of each pending wr_ack
        self.slot = 0
        self.write_turn = False
        self.bursts = 0
        self.read_beats = 0
        self.write_beats = 0
        self.read_done = 0        # bursts completed
        self.write_done = 0
        self.log = None     # list of [cycle, write, addr, beats, client, end] when tracing
        self._open = deque()    # tracing: log entries of bursts in flight (reads, then writes)
        self._open_w = deque()

    def check(self, addr: int, beats: int, write: bool) -> None:
        bb = self.bb
        what = "write" if write else "read"
        if addr % bb:
            raise MemoryViolation(f"{what} burst at {addr:#x} is not aligned to {bb} bytes")
        if not 1 <= beats <= self.mb:
            raise MemoryViolation(f"{what} burst of {beats} beats (max {self.mb})")
        end = addr + beats * bb
        if end > self.dram_size:
            raise MemoryViolation(f"{what} burst [{addr:#x}, {end:#x}) past the end of DRAM "
                                  f"({self.dram_size:#x})")
        if addr // 4096 != (end - 1) // 4096:
            raise MemoryViolation(f"{what} burst [{addr:#x}, {end:#x}) crosses a 4 KiB "
                                  f"boundary")

    # outputs in cycle t
    def channels(self, t: int) -> tuple[bool, bool]:
        """(``rd_valid``, ``wr_ready``) in cycle ``t``."""
        reads, writes = self.reads, self.writes
        rd = bool(reads) and t >= reads[0][1] and t >= self.slot
        wr = bool(writes) and t >= writes[0][1] and t >= self.slot
        if rd and wr and self.k > 1:
            return not self.write_turn, self.write_turn
        return rd, wr

    def rcmd_ready(self) -> bool:
        return len(self.reads) < self.n

    def wcmd_ready(self) -> bool:
        return len(self.writes) + len(self.acks) < self.n

    def wr_ack(self, t: int) -> bool:
        return bool(self.acks) and self.acks[0] == t

    # the clock edge
    def read_command(self, t: int, addr: int, beats: int, client: int = 0) -> None:
        self.check(addr, beats, False)
        self.bursts += 1
        self.reads.append([beats, t + self.latency, beats])
        if self.log is not None:
            entry = [t, False, addr, beats, client, None]
            self.log.append(entry)
            self._open.append(entry)

    def write_command(self, t: int, addr: int, beats: int) -> None:
        self.check(addr, beats, True)
        self.bursts += 1
        self.writes.append([beats, t + 1, beats])
        if self.log is not None:
            entry = [t, True, addr, beats, 3, None]
            self.log.append(entry)
            self._open_w.append(entry)

    def read_beat(self, t: int) -> None:
        self.read_beats += 1
        head = self.reads[0]
        head[0] -= 1
        if head[0] == 0:
            self.reads.popleft()
            self.read_done += 1
            if self.log is not None:
                self._open.popleft()[5] = t + 1
        self.slot = t + self.k
        self.write_turn = True

    def write_beat(self, t: int) -> None:
        self.write_beats += 1
        head = self.writes[0]
        head[0] -= 1
        if head[0] == 0:
            self.writes.popleft()
            self.write_done += 1
            self.acks.append(t + self.latency)
        self.slot = t + self.k
        self.write_turn = False

    def acked(self, t: int) -> None:
        self.acks.popleft()
        if self.log is not None:
            self._open_w.popleft()[5] = t + 1

    def state(self, t: int, tags) -> tuple:
        """For :class:`~sim.timing.period.PeriodSkipper`: (exact, counting). Each queue is its
        head (the beats it has left: counting) and runs of equal bursts behind it (the first
        run's length: counting); ``tags`` (the arbiter's client numbers) go with the reads.
        Times are relative to ``t``: those already passed are all alike (0, exact); those to
        come (a burst's first cycle, a ``wr_ack``) count down."""
        ex = [len(self.acks), max(self.slot - t, 0), self.write_turn]
        cnt, later = [], []
        for q, who in ((self.reads, tags), (self.writes, None)):
            if not q:
                ex.append(None)
                cnt += (0, 0)
                continue
            runs = []
            for i, (b, f, n) in enumerate(q):
                rel = f - t
                key = (b if i else n, rel > 0, n, who[i] if who else 3)
                if rel > 0:
                    later.append(rel)
                if i > 1 and rel <= 0 and runs[-1][0] == key:
                    runs[-1][1] += 1
                else:
                    runs.append([key, 1])
            ex.append((runs[0][0], len(runs), runs[1][0] if len(runs) > 1 else None,
                       tuple((k, c) for k, c in runs[2:])))
            cnt += (q[0][0], runs[1][1] if len(runs) > 1 else 0)
        return tuple(ex), cnt + later + [a - t for a in self.acks]

    def set_state(self, t: int, counts, tags) -> None:
        """Set what :meth:`state` counts (a jump, before :meth:`shift`): the heads' beats
        left, the first runs' lengths (repeating the run's first burst) and the times to
        come."""
        head_r, run_r, head_w, run_w = counts[:4]
        later = [q[i] for q in (self.reads, self.writes) for i in range(len(q))
                 if q[i][1] > t]
        for entry, rel in zip(later, counts[4:]):
            entry[1] = t + rel
        self.acks = deque(t + rel for rel in counts[4 + len(later):])
        for q, head, run, who in ((self.reads, head_r, run_r, tags),
                                  (self.writes, head_w, run_w, None)):
            if not q:
                continue
            q[0][0] = head
            if len(q) == 1:
                continue

            def key(i):
                b, f, n = q[i]
                return b, f - t, n, who[i] if who is not None else 3
            first = key(1)
            if first[1] > 0:
                continue        # a burst to come is a run of its own
            n = 1
            while n + 1 < len(q) and key(n + 1)[1] <= 0 and \
                    key(n + 1)[::2] == first[::2] and key(n + 1)[3] == first[3]:
                n += 1
            entry, tag = list(q[1]), who[1] if who is not None else None
            for _ in range(n):
                del q[1]
                if who is not None:
                    del who[1]
            for _ in range(run):
                q.insert(1, list(entry))
                if who is not None:
                    who.insert(1, tag)

    def shift(self, dt: int) -> None:
        """Move every time by ``dt`` (a jump over repeated periods)."""
        for q in (self.reads, self.writes):
            for e in q:
                e[1] += dt
        self.acks = deque(a + dt for a in self.acks)
        self.slot += dt

    def next_times(self) -> list:
        out = [self.slot]
        if self.reads:
            out.append(self.reads[0][1])
        if self.writes:
            out.append(self.writes[0][1])
        if self.acks:
            out.append(self.acks[0])
        return out


class SliceTiming:
    """``hw.memport.StreamSlice``, timing only: ``main`` (offered downstream) and ``skid`` are
    None when empty, else what they hold — a read beat's ``last``, or a read command's
    ``(addr, beats)``. ``ready`` (the upstream side may hand one over) is high while ``skid``
    is empty."""

    __slots__ = ("main", "skid")

    def __init__(self):
        self.main = self.skid = None

    def edge(self, beat, out_ready: bool) -> None:
        """The clock edge: ``beat`` is what is offered on the input (None: nothing),
        ``out_ready`` the downstream side's ready."""
        if out_ready or self.main is None:          # the main register moves
            if self.skid is not None:
                self.main, self.skid = self.skid, None
            else:
                self.main = beat
        elif beat is not None and self.skid is None:
            self.skid = beat                        # park it

    def state(self) -> tuple:
        return self.main, self.skid


class MemArbiter:
    """``hw.memport.MemArbiter``: round robin per read command among fetch, load, compute.
    Each client hands its commands to a :class:`SliceTiming` of its own (``cmd_slices``,
    while its skid is empty: that is the client's handshake); the arbiter sees the slices'
    main registers, so a command offered in *t* can fire at the earliest in *t* + 1. The grant
    is registered: ``gnt`` (a client or None) is the only client whose command may fire in a
    cycle (not halted, fewer than ``mem_outstanding`` read bursts in flight). While ``gnt``
    requests and does not fire it holds; otherwise the next ``gnt`` is the first requester
    of this cycle from ``ptr`` on (``ptr``: after a command the client behind it). So a
    client that starts requesting waits a cycle more; one that keeps requesting is re-granted
    and its bursts go back to back. The granted client's number is queued and the ``rd``
    beats go to the head of the queue, through a one-beat skid buffer: the memory's beat moves
    whenever the buffer is empty (``skid``: it holds a beat, ``skid_last``: its ``last``); a
    beat the client's slice does not take is parked there and offered first. Each read client
    sees its beats through a :class:`SliceTiming` of its own (``slices``): a beat handed over
    in *t* is offered to the client from *t* + 1; the slice takes one while its skid is empty,
    and the tag leaves with the ``last`` beat's hand-over. The store's writes pass straight
    through; ``writes`` counts them until their ``wr_ack``.
    """

    def __init__(self, cfg: VTAConfig):
        self.n = cfg.mem_outstanding
        self.ptr = 0
        self.gnt = None
        self.tags = deque()
        self.skid = False
        self.skid_last = False
        self.takes = 0              # beats handed to the clients' slices (for the skippers)
        self.slices = tuple(SliceTiming() for _ in range(3))
        self.cmd_slices = tuple(SliceTiming() for _ in range(3))
        self.writes = 0

    @property
    def idle(self) -> bool:
        return not self.tags and not self.writes

    def commands(self):
        """The commands at the arbiter (the ``cmd_slices``' main registers), or None if none."""
        c0, c1, c2 = self.cmd_slices
        if c0.main is None and c1.main is None and c2.main is None:
            return None
        return c0.main, c1.main, c2.main

    def pick(self, cmds) -> int | None:
        """The client granted among ``cmds`` (one per read client, None = no request)."""
        n = len(cmds)
        for j in range(n):
            i = (self.ptr + j) % n
            if cmds[i] is not None:
                return i
        return None
