"""Traces (Chrome trace format, opens in Perfetto) and the summary of a cycle simulation."""

from __future__ import annotations

import json

__all__ = ["summary", "write_trace"]


def summary(core) -> dict:
    cfg = core.cfg
    c = core.counters
    cycles = max(1, core.cycles)
    m = core.mem
    return {
        "cycles": core.cycles,
        "gemm_utilisation": c["gemm_uops"] / cycles,
        "macs": c["gemm_uops"] * cfg.macs_per_cycle,
        "mac_utilisation": c["gemm_uops"] * cfg.macs_per_cycle / (cycles * cfg.macs_per_cycle),
        "mem_busy_fraction": c["mem_busy"] / cycles,
        "bytes_read": m.read_beats * cfg.bus_bytes,
        "bytes_written": m.write_beats * cfg.bus_bytes,
        "bandwidth_bytes_per_cycle": (m.read_beats + m.write_beats) * cfg.bus_bytes / cycles,
        "bursts": m.bursts,
        "token_wait": {"load": c["load_stall"], "compute": c["compute_stall"],
                       "store": c["store_stall"]},
        "queue_full_wait": {"fetch": c["fetch_stall"]},
    }


def write_trace(core, path) -> None:
    raise NotImplementedError
