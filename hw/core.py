"""The VTA core: fetch, load, compute, store, their queues, the shared buffers and the control."""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, ResetInserter, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa.config import VTAConfig
from isa.errors import ErrorCode
from isa.arch import COUNTERS, STAGES

from .compute import ComputeModule
from .fetch import FetchModule
from .fields import INDEX_BITS
from .gemm import operand_buffer
from .load import LoadModule
from .memport import MemArbiter, MemPortSignature
from .modcommon import ERR_BITS
from .queues import CommandQueue, TokenQueues
from .store import StoreModule, out_buffer

__all__ = ["VTACore", "COUNTERS"]

# COUNTERS (the per-run event counters, 32 bits each, in register-map order) is
# isa.registers.COUNTERS, re-exported here.


class VTACore(wiring.Component):
    """The decoupled access-execute core behind one memory port.

    Control: a ``launch`` pulse in cycle *L* clears all control state (buffers keep their
    contents) and starts fetch in *L* + 1; ``insn_addr``, ``insn_count`` and ``dram_size``
    are present from *L* and held while running (fetch prepares its start in *L*). See docs/hardware.md for the exact end of a run:
    ``done`` rises after FINISH retires (and fetch is quiet), or after an error once the
    arbiter is halted (a register: from the cycle after the error) and no burst is
    outstanding. ``cycles`` counts *L* + 1 up to the last cycle before ``done``.
    ``error_code``/``error_index`` hold the error (ErrorCode). Errors raised by the core itself:
    DEADLOCK (fetch can dispatch nothing more and every module is idle with an empty queue or
    blocked on a token, not all empty) and MISSING_FINISH (every instruction dispatched, all
    modules idle with empty queues, no FINISH).
    """

    def __init__(self, cfg: VTAConfig, *, compute=ComputeModule):
        # ``compute``: the compute module's constructor (a stand-in with its signature lets
        # bitstreams.probe time the memory side of the core alone).
        self._cfg = cfg
        self._compute = compute
        super().__init__({
            "launch": In(1), "insn_addr": In(32), "insn_count": In(32), "dram_size": In(32),
            "running": Out(1), "done": Out(1),
            "error_code": Out(ERR_BITS), "error_index": Out(INDEX_BITS),
            "cycles": Out(64),
            **{name: Out(32) for name in COUNTERS},
            "mem": Out(MemPortSignature(cfg)),
        })

    def elaborate(self, platform):
        top = Module()
        go = Signal()
        top.d.sync += go.eq(self.launch)
        m = Module()
        top.submodules.core = ResetInserter(self.launch)(m)
        cfg = self._cfg

        m.submodules.fetch = fetch = FetchModule(cfg)
        m.submodules.load = load = LoadModule(cfg)
        m.submodules.compute = compute = self._compute(cfg)
        m.submodules.store = store = StoreModule(cfg)
        queues = [CommandQueue(cfg) for _ in range(3)]
        for name, q in zip(("load_q", "compute_q", "store_q"), queues):
            m.submodules[name] = q
        m.submodules.tokens = tok = TokenQueues(cfg)
        m.submodules.arbiter = arb = MemArbiter(cfg)
        modules = (load, compute, store)

        self._buffers(m, load, compute, store, platform)
        self._memory(m, fetch, modules, arb)
        self._queues(m, fetch, queues, modules, tok)
        ctl = self._control(m, go, fetch, modules, queues, arb)
        self._counters(m, go, ctl, fetch, modules, arb)
        return top

    def _buffers(self, m, load, compute, store, platform):
        """The shared buffers: INP, WGT (load writes, compute reads), OUT (compute writes,
        store reads). Block RAMs with one synchronous read port each, read through the block
        RAMs' own output registers (data two cycles after the address; OUT's register advances
        with its read enable: :func:`hw.gemm.operand_buffer`, :func:`hw.store.out_buffer`);
        the modules' contracts account for it."""
        cfg = self._cfg
        inp_w, inp_r = operand_buffer(m, "inp_buf", cfg.inp_elem_bits, cfg.inp_depth,
                                      platform=platform)
        wgt_w, wgt_r = operand_buffer(m, "wgt_buf", cfg.wgt_elem_bits, cfg.wgt_depth,
                                      platform=platform)
        out_w, out_r = out_buffer(m, cfg, platform=platform)
        m.d.comb += [
            inp_w.addr.eq(load.inp_waddr), inp_w.data.eq(load.inp_wdata), inp_w.en.eq(load.inp_wen),
            wgt_w.addr.eq(load.wgt_waddr), wgt_w.data.eq(load.wgt_wdata), wgt_w.en.eq(load.wgt_wen),
            inp_r.addr.eq(compute.inp_raddr), compute.inp_rdata.eq(inp_r.data),
            wgt_r.addr.eq(compute.wgt_raddr), compute.wgt_rdata.eq(wgt_r.data),
            out_w.addr.eq(compute.out_waddr), out_w.data.eq(compute.out_wdata),
            out_w.en.eq(compute.out_wen),
            out_r.addr.eq(store.out_raddr), out_r.en.eq(store.out_ren),
            out_r.out_en.eq(store.out_ren),
            store.out_rdata.eq(out_r.data),
        ]

    def _memory(self, m, fetch, modules, arb):
        """The memory port: the four clients (``CLIENTS`` order) on the arbiter, the arbiter
        on the core's port. No register in between: the arbiter's contract (hw/memport.py,
        docs/hardware.md §2) is the core's."""
        for i, client in enumerate((fetch, *modules)):
            wiring.connect(m, client.port, arb.clients[i])
        wiring.connect(m, arb.mem, wiring.flipped(self.mem))

    def _queues(self, m, fetch, queues, modules, tok):
        """Fetch's dispatch into the three command queues and the modules' heads; the four
        token queues (``TOKEN_QUEUES`` order). Combinational wiring: the queues' contracts
        (hw/queues.py, docs/hardware.md §4) are the core's."""
        for i, (q, mod) in enumerate(zip(queues, modules)):
            m.d.comb += [
                q.w_data.eq(fetch.q_data), q.w_en.eq(fetch.q_en[i]), fetch.q_rdy[i].eq(q.w_rdy),
                mod.head.eq(q.r_data), mod.head_valid.eq(q.r_rdy), q.r_en.eq(mod.pop),
                mod.head_valid_next.eq(q.r_rdy_next),
            ]
        load, compute, store = modules
        m.d.comb += [
            tok.push[0].eq(load.push_l2g), tok.pop[0].eq(compute.pop_l2g),
            tok.push[1].eq(compute.push_g2l), tok.pop[1].eq(load.pop_g2l),
            tok.push[2].eq(compute.push_g2s), tok.pop[2].eq(store.pop_g2s),
            tok.push[3].eq(store.push_s2g), tok.pop[3].eq(compute.pop_s2g),
            compute.l2g_avail_next.eq(tok.avail_next[0]),
            load.g2l_avail_next.eq(tok.avail_next[1]),
            store.g2s_avail_next.eq(tok.avail_next[2]),
            compute.s2g_avail_next.eq(tok.avail_next[3]),
            load.l2g_overflow.eq(tok.overflow[0]), compute.g2l_overflow.eq(tok.overflow[1]),
            compute.g2s_overflow.eq(tok.overflow[2]), store.s2g_overflow.eq(tok.overflow[3]),
        ]

    def _control(self, m, go, fetch, modules, queues, arb):
        """Run control: ``running``, the error latches, ``done``, the halts.

        Errors of the modules wait ("pending") until fetch has dispatched all it can: a field
        error that fetch finds meanwhile wins, as in the functional simulator, whose fetch
        decodes ahead of execution. Likewise a retired FINISH ends the run only once fetch is
        quiet. Latency: an error or FINISH seen in cycle *t* is latched at the end of *t*;
        the arbiter's halt is ``failed`` one cycle late (a register, *t* + 1 after the
        failure); ``done`` rises at the end of the first cycle with the halt up and no burst
        in flight, or after the FINISH with fetch quiet. Returns the control signals the
        counters use (``running``, ``done``)."""
        running = Signal()
        done = Signal()
        fetch_err = Signal()
        core_err_latched = Signal()
        finish_seen = Signal()
        # The error's code and index, fetch's and the core's in registers of their own
        # (``fetch_err`` says which one holds the error: the two flags exclude each other)
        fetch_code, core_code_held = Signal(ERR_BITS), Signal(ERR_BITS)
        fetch_index, core_index_held = Signal(INDEX_BITS), Signal(INDEX_BITS)
        halt_modules = Signal()
        failed = Signal()
        arb_halt = Signal()
        mod_err, mod_code_now, mod_index_now, best_valid = self._module_error(m, modules,
                                                                              running, done)
        m.d.comb += [
            failed.eq(fetch_err | core_err_latched | (mod_err & fetch.quiet)),
            self.running.eq(running & ~done), self.done.eq(done),
        ]
        # the reported error: the first of the three flags that holds one chooses its pair
        # (they exclude each other), none gives 0
        for out, values in ((self.error_code, (fetch_code, core_code_held, mod_code_now)),
                            (self.error_index, (fetch_index, core_index_held, mod_index_now))):
            chosen = 0
            for flag, value in reversed(list(zip((fetch_err, core_err_latched, mod_err),
                                                 values))):
                chosen = Mux(flag, value, chosen)
            m.d.comb += out.eq(chosen)
        for unit in modules:
            m.d.comb += [unit.halt.eq(halt_modules), unit.dram_size.eq(self.dram_size)]
        fetch_halt = Signal()       # fetch_err | core_err_latched | done, a register (below)
        m.d.comb += [fetch.halt.eq(fetch_halt),
                     fetch.dram_size.eq(self.dram_size),
                     fetch.insn_addr.eq(self.insn_addr), fetch.insn_count.eq(self.insn_count),
                     fetch.start.eq(go), arb.halt.eq(arb_halt)]
        # The arbiter's halt is a register (one cycle after the failure): ``failed`` depends on
        # the fetch buffer's head decode, and that path must not reach the memory port
        # (docs/hardware.md §6, §12). ``done`` waits for it so that no grant is in flight.
        m.d.sync += arb_halt.eq(failed | done)
        with m.If(go):
            m.d.sync += running.eq(1)

        core_err, core_code, core_index = self._stuck(m, fetch, modules, queues)
        # The modules' halt, ``fetch_err | mod_err | core_err_latched | finish_seen | done``,
        # as one register (Fmax, §12 step 11): none of those flags clears during a run, so it
        # rises with the first of them. Their setting conditions reduce to the terms below
        # once the halt is up (each is guarded by a flag that already implies it; ``done``
        # follows a failure or FINISH, already latched).
        # (Before ``running`` — the start cycle — only fetch can raise an error (its DRAM
        # range check): the launch has cleared the modules, the queues and the flags, so the
        # other terms here and below need no ``running``, one input fewer, Fmax.)
        m.d.sync += halt_modules.eq(halt_modules | best_valid | core_err | modules[1].finish
                                    | running & fetch.err)
        with m.If(~halt_modules & core_err):
            m.d.sync += core_err_latched.eq(1)
        with m.If(running & ~done & fetch.err & ~fetch_err & ~core_err_latched):
            m.d.sync += fetch_err.eq(1)
        # The error's code and index follow this cycle's candidates until one of the two
        # flags is latched, so their enable is a register, not the deep set conditions (Fmax,
        # §12 step 17); they are read only once a flag is set. Fetch's error and the core's
        # exclude each other (``core_err`` needs fetch quiet, and a quiet fetch raises no
        # error), so each pair follows its own candidate: no choice by ``fetch.err`` before
        # the registers (Fmax).
        with m.If(~fetch_err & ~core_err_latched):
            m.d.sync += [fetch_code.eq(fetch.err_code), fetch_index.eq(fetch.err_index)]
        # The core's pair is the candidate of the cycle before (``_stuck``), so it follows a
        # cycle longer: the one loaded in the cycle after the latch describes the latching
        # cycle. Nothing reads it before ``done``, two cycles later at the earliest.
        core_err_before = Signal()      # ``core_err_latched`` of the cycle before
        m.d.sync += core_err_before.eq(core_err_latched)
        with m.If(~fetch_err & ~core_err_before):
            m.d.sync += [core_code_held.eq(core_code), core_index_held.eq(core_index)]

        # (A FINISH that retires with a module error in the same cycle sets ``finish_seen``
        # too, but that error is ``mod_err`` from the next cycle on, which keeps ``end`` low:
        # the set condition needs no module error, the deepest input, Fmax §12.)
        with m.If(modules[1].finish):
            m.d.sync += finish_seen.eq(1)
        # (``arb_halt`` while not ``done`` is ``failed`` of the cycle before, and ``failed``
        # stays once up: its flags are sticky, and ``mod_err & fetch.quiet`` keeps fetch
        # quiet — the modules halt from the cycle after their error, so no queue frees room
        # for a stalled fetch. So the failure's term reads no ``failed`` of this cycle, Fmax.)
        end = Signal()
        m.d.comb += end.eq((arb_halt & arb.idle)
                           | (finish_seen & ~mod_err & ~fetch_err & fetch.quiet))
        with m.If(end):             # (``done`` stays once set: no ``~done`` needed here)
            m.d.sync += done.eq(1)
        # Fetch's halt as one register set with the first of its three sticky flags (each
        # set condition reduced by the flags that imply the halt already): fetch's dispatch
        # then starts from a flip-flop, not from an OR of three (Fmax, §12 step 17).
        m.d.sync += fetch_halt.eq(fetch_halt | (~halt_modules & core_err) | end
                                  | running & fetch.err)
        return {"running": running, "done": done}

    def _module_error(self, m, modules, running, done):
        """The pending module error: ``mod_err`` high from the cycle after the first cycle *E*
        in which a module raises one (while running), and (code, index) of the one with the
        lowest instruction index. Both come from the modules' error outputs held in registers
        (``_first_module_error``) and a register of ``running & ~done`` of the cycle before, so
        neither the modules' late error outputs nor an index compare reach a control register
        in *E* (Fmax, §12 steps 8 and 21): in *E* + 1 ``mod_err`` is those registers' AND-OR,
        later the register ``mod_err_before`` holds it. Code and index are chosen in *E* + 2
        (``fresh2``) and latched; from then on the returned values read the same in every
        cycle as if latched at once. Returns (``mod_err``, code, index, any module error in this cycle)."""
        mod_err = Signal()
        mod_err_before = Signal()   # ``mod_err`` of the cycle before
        live_before = Signal()      # ``running & ~done`` of the cycle before
        fresh = Signal()            # the first module error was in the cycle before
        code, index = Signal(ERR_BITS), Signal(INDEX_BITS)
        code_now, index_now = Signal(ERR_BITS), Signal(INDEX_BITS)
        any_err = Signal()
        m.d.comb += any_err.eq(Cat(*[mod.err for mod in modules]).any())
        best_code, best_index, held_any = self._first_module_error(m, modules)
        m.d.sync += [mod_err_before.eq(mod_err), live_before.eq(running & ~done)]
        m.d.comb += [fresh.eq(live_before & held_any & ~mod_err_before),
                     mod_err.eq(mod_err_before | fresh)]
        # Code and index are chosen a cycle after ``fresh`` (``fresh2``, *E* + 2), from the
        # held values a cycle older and their index compares registered (Fmax, §12 step 30:
        # held index → 32-bit compare → choice → the CSR's copy was a seed's worst path). In
        # *E* + 1 the error flag is up with its code not yet chosen: no reader can tell, as
        # ``done`` rises in *E* + 3 at the earliest (``arb_halt`` is ``failed`` a cycle late)
        # and the CSR copies are a cycle old.
        fresh2 = Signal()
        m.d.sync += fresh2.eq(fresh)
        with m.If(fresh2):
            m.d.sync += [code.eq(best_code), index.eq(best_index)]
        m.d.comb += [code_now.eq(Mux(fresh2, best_code, code)),
                     index_now.eq(Mux(fresh2, best_index, index))]
        return mod_err, code_now, index_now, any_err

    def _stuck(self, m, fetch, modules, queues):
        """Deadlock / missing FINISH: (error?, code, index), the error combinationally from
        this cycle's state, its code and index from the cycle before's (registered inputs, so
        the head indices' compares and ``insn_count − 1`` end in registers: Fmax, §12 session
        17). Nothing can move any more: fetch is quiet and every module idle with an empty
        queue or blocked on a token. MISSING_FINISH (index ``insn_count − 1``) when all is
        dispatched and empty, else DEADLOCK at the lowest blocked instruction index. The core
        latches the error at the end of the cycle, its code and index a cycle later
        (``_control``)."""
        # (The core reads ``stuck`` only while the modules' halt is low, where a module's
        # ``blocked`` is its register ``stopped``: one LUT level less, Fmax.)
        empty = [mod.idle & q.empty for mod, q in zip(modules, queues)]
        quiet = [e | mod.stopped for e, mod in zip(empty, modules)]
        all_quiet = Signal()
        all_empty = Signal()
        m.d.comb += [all_quiet.eq(fetch.quiet & quiet[0] & quiet[1] & quiet[2]),
                     all_empty.eq(empty[0] & empty[1] & empty[2])]
        # the cycle before's flags, head indices and ``all_empty & all_dispatched``; the
        # compares registered by ``_lowest`` from the same cycle's indices
        stopped = [Signal(name=f"stopped_before_{i}") for i in range(len(modules))]
        heads = [Signal(INDEX_BITS, name=f"head_index_before_{i}") for i in range(len(modules))]
        finished, last_index = Signal(), Signal(INDEX_BITS)
        m.d.sync += [*(s.eq(mod.stopped) for s, mod in zip(stopped, modules)),
                     *(h.eq(mod.head.index) for h, mod in zip(heads, modules)),
                     finished.eq(all_empty & fetch.all_dispatched),
                     last_index.eq(self.insn_count - 1)]
        take = self._lowest(m, stopped, [mod.head.index for mod in modules], "blocked",
                            registered=True)
        lowest = Signal(INDEX_BITS)
        m.d.comb += lowest.eq((1 << INDEX_BITS) - 1)      # none blocked: all ones
        for t, h in zip(take, heads):
            with m.If(t):
                m.d.comb += lowest.eq(h)
        stuck = Signal()
        code = Signal(ERR_BITS)
        index = Signal(INDEX_BITS)
        # (``fetch.quiet`` excludes ``fetch.err``: nothing is dispatched and nothing fails)
        m.d.comb += stuck.eq(all_quiet)
        with m.If(finished):
            m.d.comb += [code.eq(ErrorCode.MISSING_FINISH), index.eq(last_index)]
        with m.Else():
            m.d.comb += [code.eq(ErrorCode.DEADLOCK), index.eq(lowest)]
        return stuck, code, index

    @staticmethod
    def _lowest(m, flags, indices, name, registered=False):
        """One-hot: which of the flagged entries has the lowest index (ties to the first).
        The index compares run in parallel from registers (the modules' index registers and
        their queues' head registers), so the late flags only pass the selection (Fmax,
        docs/hardware.md §12); with ``registered`` the compares are registers themselves, so
        ``indices`` are compared a cycle before ``flags`` are read."""
        n = len(flags)
        earlier = {}
        for i in range(n):
            for j in range(n):
                if i != j:
                    lt = Signal(name=f"{name}_before_{i}_{j}")
                    domain = m.d.sync if registered else m.d.comb
                    domain += lt.eq(indices[i] < indices[j] if i > j
                                    else indices[i] <= indices[j])
                    earlier[i, j] = lt
        take = []
        for i in range(n):
            t = Signal(name=f"{name}_take_{i}")
            m.d.comb += t.eq(flags[i] & Cat(*[~flags[j] | earlier[i, j]
                                              for j in range(n) if j != i]).all())
            take.append(t)
        return take

    def _first_module_error(self, m, modules):
        """The modules' errors of the cycle before, held in registers (whether there is one),
        and (code, index) of the one with the lowest instruction index among those of two
        cycles before (``_lowest`` on registered compares; ties cannot happen: one index, one
        module)."""
        def held_regs(tag):
            return [(Signal(name=f"{tag}_err_{i}"), Signal(ERR_BITS, name=f"{tag}_code_{i}"),
                     Signal(INDEX_BITS, name=f"{tag}_index_{i}")) for i in range(len(modules))]
        held, held2 = held_regs("held"), held_regs("held2")
        for (err, code, index), mod, older in zip(held, modules, held2):
            m.d.sync += [err.eq(mod.err), code.eq(mod.err_code), index.eq(mod.err_index)]
            m.d.sync += [o.eq(h) for o, h in zip(older, (err, code, index))]
        best_code = Signal(ERR_BITS)
        best_index = Signal(INDEX_BITS)
        take = self._lowest(m, [h[0] for h in held2], [h[2] for h in held], "err",
                            registered=True)
        for t, (_err, code, index) in zip(take, held2):
            with m.If(t):
                m.d.comb += [best_code.eq(code), best_index.eq(index)]
        held_any = Signal()
        m.d.comb += held_any.eq(Cat(*[h[0] for h in held]).any())
        return best_code, best_index, held_any

    def _counters(self, m, go, ctl, fetch, modules, arb):
        """The cycle counter and the event counters (``COUNTERS``): each counts, at the end of
        a cycle, the cycles from *L* + 1 (``go``) up to the last one before ``done`` in which
        its event is high; read combinationally from the registers (docs/hardware.md §8)."""
        compute = modules[1]
        active = Signal()
        m.d.comb += active.eq((ctl["running"] | go) & ~ctl["done"])
        cycles = Signal(64)
        m.d.comb += self.cycles.eq(cycles)
        counters = {name: Signal(32, name=name) for name in COUNTERS}
        events = {
            "fetch_busy": fetch.busy, "fetch_stall": fetch.stall,
            "gemm_uops": compute.gemm_uop, "alu_uops": compute.alu_uop, "mem_busy": ~arb.idle,
        }
        for name, mod in zip(STAGES, modules):
            events[f"{name}_busy"] = ~mod.idle | mod.pop
            events[f"{name}_stall"] = mod.blocked
        with m.If(active):
            m.d.sync += cycles.eq(cycles + 1)
            for name, sig in counters.items():
                with m.If(events[name]):
                    m.d.sync += sig.eq(sig + 1)
        for name, sig in counters.items():
            m.d.comb += getattr(self, name).eq(sig)
