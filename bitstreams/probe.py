"""Fmax of one block of the core in isolation: ``python -m bitstreams.probe --block compute``.

The whole design's worst path hides every other one, so a block is measured alone: its ports
are registered on both sides (a flip-flop between every top-level pin and the block, so only
paths inside the block and one register away are timed), Yosys ``synth_ecp5`` maps it and
nextpnr-ecp5 places and routes it out of context on the LFE5U-85F (speed grade 6, nextpnr's
default). Prints Fmax and the critical path as nextpnr reports it, and the LUT4 levels of
the netlist's longest paths between registers. Tools run at niceness 10.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Elaboratable, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa.config import load_config
from isa.errors import InputError

from .errors import ToolError
from .levels import lut_levels
from .tools import tool_env, tool_path

__all__ = ["BLOCKS", "ComputeStandIn", "GemmWithBuffers", "RegisteredIO", "lut_levels", "probe",
           "main"]


def _compute(cfg):
    from hw.compute import ComputeModule
    return ComputeModule(cfg)


def _gemm(cfg):
    from hw.gemm import GemmCore
    return GemmCore(cfg)


class GemmWithBuffers(wiring.Component):
    """The GEMM core with its four buffers (written from outside), as the compute module wires
    them: the block-RAM reads and the ACC write are inside, so are their paths."""

    def __init__(self, cfg):
        from hw.fields import gemm_insn
        self._cfg = cfg
        bufs = self._buffers(cfg)
        super().__init__({
            "start": In(1), "insn": In(gemm_insn(cfg)), "busy": Out(1), "err": Out(1),
            "uop_done": Out(1), "acc_wdata": Out(cfg.acc_elem_bits),
            **{f"{b}_load_{k}": In(w) for b, (width, depth) in bufs.items()
               for k, w in (("addr", depth), ("data", width), ("en", 1))}})

    @staticmethod
    def _buffers(cfg):
        return {"uop": (32, cfg.log_uop_depth), "inp": (cfg.inp_elem_bits, cfg.log_inp_depth),
                "wgt": (cfg.wgt_elem_bits, cfg.log_wgt_depth),
                "acc": (cfg.acc_elem_bits, cfg.log_acc_depth)}

    def elaborate(self, platform):
        from amaranth.lib.memory import Memory
        from hw.compute import acc_buffer, uop_buffer
        from hw.gemm import GemmCore, operand_buffer
        m = Module()
        cfg = self._cfg
        m.submodules.gemm = g = GemmCore(cfg)
        m.d.comb += [g.start.eq(self.start), g.insn.eq(self.insn), self.busy.eq(g.busy),
                     self.err.eq(g.err), self.uop_done.eq(g.uop_done),
                     self.acc_wdata.eq(g.acc_wdata)]
        for b, (width, log_depth) in self._buffers(cfg).items():
            if b == "acc":      # the compute module's ACC buffer (registered read and write)
                w, (r, _) = acc_buffer(m, cfg, platform=platform)
            elif b in ("inp", "wgt"):       # the core's, read through output registers
                w, r = operand_buffer(m, f"{b}_buf", width, 1 << log_depth, platform=platform)
            elif b == "uop":                # the compute module's (the GEMM never holds it)
                w, r = uop_buffer(m, cfg, platform=platform)
            else:
                m.submodules[b] = mem = Memory(shape=width, depth=1 << log_depth, init=[])
                w, r = mem.write_port(), mem.read_port()
            m.d.comb += [r.addr.eq(getattr(g, f"{b}_raddr")),
                         getattr(g, f"{b}_rdata").eq(r.data)]
            waddr, wdata, wen = (getattr(self, f"{b}_load_{k}") for k in ("addr", "data", "en"))
            if b == "acc":      # the core's write wins, as in hw.compute
                waddr = Mux(g.acc_wen, g.acc_waddr, waddr)
                wdata = Mux(g.acc_wen, g.acc_wdata, wdata)
                wen = wen | g.acc_wen
            m.d.comb += [w.addr.eq(waddr), w.data.eq(wdata), w.en.eq(wen)]
        return m


def _gemm_buffers(cfg):
    return GemmWithBuffers(cfg)


def _alu(cfg):
    from hw.alu import TensorAlu
    return TensorAlu(cfg)


def _uop_loop(cfg):
    from hw.uop_loop import UopLoop, offset_widths
    return UopLoop(cfg, offset_widths(cfg, {"dst": cfg.log_acc_depth, "src": cfg.log_inp_depth,
                                            "wgt": cfg.log_wgt_depth}))


def _load(cfg):
    from hw.load import LoadModule
    return LoadModule(cfg)


def _store(cfg):
    from hw.store import StoreModule
    return StoreModule(cfg)


def _csr(cfg):
    from hw.csr import ControlRegisters
    return ControlRegisters(cfg)


def _board(cfg):
    """The on-chip board design (host link, registers, DRAM, memory-port slice) with the core
    outside: its ports registered like every probe's, so only the board's own paths count."""
    from isa import hostlink as H
    from hw.board.soc import BoardSoC
    from hw.board.ulx3s import DEFAULT_MEM_BYTES, uart_divisor
    hz = cfg.target_mhz * 1e6
    return BoardSoC(cfg, mem_bytes=DEFAULT_MEM_BYTES, divisor=uart_divisor(hz, H.DEFAULT_BAUD),
                    idle_timeout=int(H.IDLE_TIMEOUT_S * hz), clock_hz=round(hz),
                    external_core=True, dp16kd=True)


class ComputeStandIn(wiring.Component):
    """A stand-in with the compute module's ports: every output is a register, fed by all the
    inputs (folded by XOR) so that nothing is optimised away. In the core it leaves the paths
    of the memory side (fetch, arbiter, queues, the core's glue) to be timed."""

    def __init__(self, cfg):
        from hw.compute import ComputeModule
        model = ComputeModule(cfg)
        model._MustUse__silence = True      # built only for its signature
        super().__init__(dict(model.signature.members))

    def elaborate(self, platform):
        from amaranth.hdl import Cat
        m = Module()
        ins, outs = [], []
        for _path, member, value in self.signature.flatten(self):
            (ins if member.flow == wiring.In else outs).append(Value.cast(value))
        width = sum(len(v) for v in outs)
        folded = Cat(*ins)
        acc = folded[:width]
        for k in range(width, len(folded), width):
            chunk = folded[k:k + width]
            acc = acc ^ chunk
        state = Signal(width)
        m.d.sync += state.eq(Cat(state[1:], state[0]) ^ acc)
        m.d.comb += Cat(*outs).eq(state)
        return m


def _memside(cfg):
    from hw.core import VTACore
    return VTACore(cfg, compute=ComputeStandIn)


def _core(cfg):
    from hw.core import VTACore
    return VTACore(cfg)


#: The blocks a probe can measure: name → constructor from a configuration.
BLOCKS = {"compute": _compute, "gemm": _gemm, "gemm_buffers": _gemm_buffers, "alu": _alu,
          "uop_loop": _uop_loop, "load": _load, "store": _store, "csr": _csr, "board": _board,
          "memside": _memside, "core": _core}


class RegisteredIO(Elaboratable):
    """``block`` with a register on every port bit: pins → flip-flop → block → flip-flop →
    pins. ``ports`` lists the top-level pins for the Verilog backend."""

    def __init__(self, block: wiring.Component):
        self.block = block
        self.ports = []
        self._pairs = []            # (pin, block member, flows into the block)
        for path, member, value in block.signature.flatten(block):
            name = "_".join(str(p) for p in path)
            value = Value.cast(value)        # a struct member as its bits
            pin = Signal(len(value), name=f"pin_{name}")
            self.ports.append(pin)
            self._pairs.append((pin, value, member.flow == wiring.In))

    def elaborate(self, platform):
        m = Module()
        m.submodules.block = self.block
        for pin, value, inward in self._pairs:
            reg = Signal(len(value), name=f"r_{pin.name}")
            if inward:
                m.d.sync += reg.eq(pin)
                m.d.comb += value.eq(reg)
            else:
                m.d.sync += reg.eq(value)
                m.d.comb += pin.eq(reg)
        return m


def _run(cmd: list, cwd: Path, timeout: float, log: str) -> None:
    with open(cwd / log, "w") as fh:
        proc = subprocess.run(["nice", "-n", "10", *cmd], cwd=cwd, stdout=fh,
                              stderr=subprocess.STDOUT, env=tool_env(), timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"probe: {cmd[0]} failed with status {proc.returncode} "
                         f"(log: {cwd / log})")


def critical_path(log_text: str) -> list:
    """The lines of nextpnr's first critical-path report (the clock of the probe)."""
    lines = log_text.splitlines()
    for i, line in enumerate(lines):
        if "Critical path report for clock" in line:
            out = []
            for nxt in lines[i + 1:]:
                if not nxt.startswith("Info:") or "Critical path report" in nxt \
                        or "Max frequency" in nxt:
                    break
                out.append(nxt[5:].rstrip())
            return out
    return []


#: Cells a path passes without ending: LUT4 counts one level; the wide-function multiplexers
#: (PFUMX, L6MUX21) and carry cells (CCU2C) are passed at no level (fast, dedicated wires).
def probe(block: str, config, work: Path, *, seed: int = 1, target_mhz: float = 100,
          timeout: float = 3000) -> dict:
    """Synthesise, place and route ``block`` of ``config`` (a name, file or VTAConfig) in
    ``work``: ``{"fmax_mhz": f, "path": [lines], "log": path}``."""
    cfg = load_config(config)
    top = RegisteredIO(BLOCKS[block](cfg))
    work.mkdir(parents=True, exist_ok=True)
    (work / "probe.v").write_text(verilog.convert(top, name="probe", ports=top.ports,
                                                  emit_src=False))
    (work / "probe.ys").write_text("read_verilog -sv probe.v\n"
                                   "synth_ecp5 -top probe -json probe.json\n")
    _run([tool_path("YOSYS"), "-q", "probe.ys"], work, timeout, "yosys.log")
    _run([tool_path("NEXTPNR_ECP5"), "--85k", "--speed", "6", "--out-of-context",
          "--timing-allow-fail", "--threads", "1", "--json", "probe.json",
          "--freq", str(target_mhz), "--seed", str(seed)], work, timeout, "nextpnr.log")
    text = (work / "nextpnr.log").read_text(errors="replace")
    found = re.findall(r"Max frequency for clock\s+'[^']*':\s*([\d.]+) MHz", text)
    if not found:
        raise SystemExit(f"probe: nextpnr reported no Fmax (log: {work / 'nextpnr.log'})")
    import json
    levels = lut_levels(json.loads((work / "probe.json").read_text()))
    return {"fmax_mhz": float(found[-1]), "path": critical_path(text),
            "log": str(work / "nextpnr.log"), "levels": levels}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bitstreams.probe", description=__doc__.split(
        "\n\n")[0])
    p.add_argument("--block", choices=sorted(BLOCKS), default="compute",
                   help="compute: the compute module (GEMM, tensor ALU, loaders, UOP/ACC "
                        "buffers); gemm, alu, uop_loop: one of its parts; gemm_buffers: the "
                        "GEMM with its four buffers; load, store, csr: those modules; memside: "
                        "the whole core with a registered stand-in for the compute module; "
                        "core: the whole core (the real compute module: the dispatch paths "
                        "from the token counters and queue heads into the units); board: the on-chip board design without the core (default: compute)")
    p.add_argument("--config", default="ecp5-small",
                   help="a shipped configuration name or a JSON file (default: ecp5-small)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=3000, help="seconds per tool")
    p.add_argument("--work", type=Path, default=None,
                   help="keep the netlist and logs here (default: a temporary folder)")
    args = p.parse_args(argv)
    try:
        cfg = load_config(args.config)
    except (InputError, OSError) as exc:
        print(f"probe: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="vta-probe-") as tmp:
        work = args.work or Path(tmp)
        try:
            r = probe(args.block, cfg, work, seed=args.seed, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print(f"probe: a tool ran past {args.timeout:.0f} s", file=sys.stderr)
            return 3
        except ToolError as exc:
            print(f"probe: {exc}", file=sys.stderr)
            return 3
    print(f"{args.block} of {args.config}, LFE5U-85F speed 6, seed {args.seed}: "
          f"Fmax {r['fmax_mhz']:.2f} MHz")
    print("\n".join(r["path"]))
    lv = r["levels"]
    print(f"LUT4 levels between registers: at most {lv['max']}; inputs per level "
          + ", ".join(f"{k}: {v}" for k, v in lv["histogram"].items()))
    for levels, end in lv["worst"]:
        print(f"  {levels} levels into {end}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
