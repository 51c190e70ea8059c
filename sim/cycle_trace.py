"""Traces (Chrome trace format: open the JSON in https://ui.perfetto.dev) and the summary of
a cycle simulation. One trace microsecond is one clock cycle."""

from __future__ import annotations

import json

from isa.encoding import Opcode

__all__ = ["summary", "write_trace"]

_TIDS = {"fetch": 0, "load": 1, "compute": 2, "store": 3, "memory": 4}


def summary(core) -> dict:
    """GEMM utilisation, memory bandwidth, and the time each module waited on tokens (and, if
    the run was traced, on the memory port)."""
    cfg = core.cfg
    c = core.counters
    cycles = max(1, core.cycles)
    m = core.mem
    out = {
        "cycles": core.cycles,
        "gemm_busy_fraction": c["gemm_uops"] / cycles,
        "macs": c["gemm_uops"] * cfg.macs_per_cycle,
        "mac_utilisation": c["gemm_uops"] / cycles,   # MACs / (cycles × peak MACs per cycle)
        "alu_uops": c["alu_uops"],
        "mem_busy_fraction": c["mem_busy"] / cycles,
        "bytes_read": m.read_beats * cfg.bus_bytes,
        "bytes_written": m.write_beats * cfg.bus_bytes,
        "bandwidth_bytes_per_cycle": (m.read_beats + m.write_beats) * cfg.bus_bytes / cycles,
        "bandwidth_fraction": (m.read_beats + m.write_beats) / cycles,
        "bursts": m.bursts,
        "token_wait_cycles": {"load": c["load_stall"], "compute": c["compute_stall"],
                              "store": c["store_stall"]},
        "queue_full_cycles": {"fetch": c["fetch_stall"]},
    }
    if core.tracing:
        out["memory_wait_cycles"] = {
            name: {"for_port": w[0], "for_data": w[1]} for name, w in core.mem_wait.items()}
    return out


def _insn_name(opcode: int) -> str:
    try:
        return Opcode(opcode).name
    except ValueError:
        return f"op{opcode}"


def write_trace(core, path) -> None:
    """Write the traced run of ``core`` (``Core.enable_trace`` before running) as JSON."""
    ev = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "VTA core"}}]
    for name, tid in _TIDS.items():
        ev.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": tid,
                   "args": {"name": name}})
    for mod in core.modules:
        for index, opcode, start, end in mod.log:
            ev.append({"name": f"{_insn_name(opcode)} #{index}", "ph": "X", "pid": 0,
                       "tid": _TIDS[mod.name], "ts": start, "dur": end + 1 - start,
                       "args": {"index": index}})
        for start, end in core.blocked_spans[mod.name]:
            ev.append({"name": "wait token", "ph": "X", "pid": 0, "tid": _TIDS[mod.name],
                       "ts": start, "dur": end - start, "cat": "stall"})
    for start, end in core.fetch_stall_spans:
        ev.append({"name": "queue full", "ph": "X", "pid": 0, "tid": _TIDS["fetch"],
                   "ts": start, "dur": end - start, "cat": "stall"})
    clients = ("fetch", "load", "compute", "store")
    for t, write, addr, beats, client, end in core.mem.log:
        end = core.cycles if end is None else end
        ev.append({"name": f"{'write' if write else 'read'} {beats}", "ph": "X", "pid": 0,
                   "tid": _TIDS["memory"], "ts": t, "dur": end - t,
                   "args": {"addr": hex(addr), "beats": beats, "client": clients[client]}})
    doc = {"traceEvents": ev, "displayTimeUnit": "ns",
           "otherData": {"unit": "1 us = 1 clock cycle", "summary": summary(core),
                         "counters": dict(core.counters)}}
    from isa.safeio import atomic_output

    with atomic_output(path, what="trace", mode="w") as fh:     # never a partial trace
        json.dump(doc, fh)
