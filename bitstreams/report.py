"""The report beside each bitstream: JSON and a readable summary."""

from __future__ import annotations

import re

from isa.config import VTAConfig

from .boards import RESOURCES, Board

__all__ = ["make_report", "summary_text", "levels_lines", "markdown_table", "critical_paths", "core_fmax",
           "slowest_endpoints", "endpoint_groups", "register_group", "CORE_CLOCK", "SLOWEST",
           "GROUPS"]

#: The report's name for the core's clock (the PLL output driving the ``sync`` domain).
CORE_CLOCK = "sync"


def _clock_name(net: str) -> str:
    # nextpnr names a clock by its net: the PLL output is the sync domain's clock.
    if "clk25" in net:
        return "clk25"
    if net.endswith("clk") or "sync" in net or "CLKOP" in net:
        return CORE_CLOCK
    return net


def _clocks(pnr: dict) -> dict:
    """nextpnr's report's clocks by design name: Fmax and constraint in MHz, nextpnr's net."""
    return {_clock_name(net): {"fmax_mhz": round(float(f["achieved"]), 2),
                               "target_mhz": round(float(f["constraint"]), 2), "net": net}
            for net, f in pnr.get("fmax", {}).items()}


def core_fmax(pnr: dict) -> float:
    """The core clock's Fmax in MHz from nextpnr's report (0 when it names none)."""
    return _clocks(pnr).get(CORE_CLOCK, {}).get("fmax_mhz", 0.0)


def critical_paths(pnr: dict) -> list:
    """nextpnr's critical path of each clock, shortened: start and end cell, delay, and the
    cells it passes (where the timing report says the time goes)."""
    out = []
    for cp in pnr.get("critical_paths", []):
        steps = cp.get("path", [])
        if not steps:
            continue
        cells = []
        for st in steps:
            for end in ("from", "to"):
                cell = st.get(end, {}).get("cell")
                if cell and (not cells or cells[-1] != cell):
                    cells.append(cell)
        out.append({"from": cp.get("from"), "to": cp.get("to"),
                    "delay_ns": round(sum(float(st.get("delay", 0)) for st in steps), 2),
                    "logic_levels": sum(1 for st in steps if st.get("type") == "logic"),
                    "start": cells[0] if cells else None, "end": cells[-1] if cells else None,
                    "cells": cells})
    return out


#: How many of the core clock's slowest endpoints a report lists.
SLOWEST = 25
#: How many register groups of the endpoints after the target's period a report lists.
GROUPS = 15


def register_group(cell: str) -> str:
    """The design register an endpoint cell belongs to: nextpnr's and Yosys's cell name without
    the core's hierarchy prefix and the packing suffixes (``_TRELLIS_FF_Q_7``, ``$DPRAM…``,
    a bit's ``_12``), so the bits of one register count as one group."""
    name = re.sub(r"^soc\.core\.core\.", "", cell)
    name = re.sub(r"(_TRELLIS_FF_Q.*|\$\d+.*|_DPRAM.*|\.\d+\$DPRAM.*|\$RAMW.*|\.mult$)", "",
                  name)
    return re.sub(r"_\d+$", "", name)


def endpoint_groups(arrivals, period: float, n: int = GROUPS) -> list:
    """The endpoints arriving after ``period`` (``arrivals``: (ns, cell, port)) by register
    group (:func:`register_group`): the ``n`` groups with the latest arrival as
    [worst ns, endpoints, group] — whether a wall is one register or many."""
    groups = {}
    for t, cell, _port in arrivals:
        if t <= period:
            continue
        g = groups.setdefault(register_group(cell or ""), [t, 0])
        g[0] = max(g[0], t)
        g[1] += 1
    ranked = sorted(groups.items(), key=lambda kv: (-kv[1][0], kv[0]))[:n]
    return [[round(t, 2), c, name] for name, (t, c) in ranked]


def slowest_endpoints(pnr: dict, n: int = SLOWEST) -> dict:
    """The core clock's endpoints with the latest arrival, from the detailed net timings of
    nextpnr's report (``--detailed-timing-report``): the ``n`` slowest as [ns, cell, port],
    and how many endpoints arrive after the target's period. The critical path names one
    path; this says whether it is alone (one fix moves the clock) or one of many. Empty when
    the report has no detailed timings. ``groups``: those after the period by register
    (:func:`endpoint_groups`)."""
    core = _clocks(pnr).get(CORE_CLOCK)
    nets = pnr.get("detailed_net_timings")
    if not core or not nets:
        return {}
    event = f"posedge {core['net']}"
    arrivals = []
    for net in nets:
        if net.get("event") != event:
            continue
        for ep in net.get("endpoints", []):
            if ep.get("event") == event:
                arrivals.append((float(max(ep.get("delay", [0]))), ep.get("cell"),
                                 ep.get("port")))
    arrivals.sort(key=lambda a: -a[0])
    period = 1e3 / core["target_mhz"] if core["target_mhz"] else float("inf")
    return {"period_ns": round(period, 3),
            "over_period": sum(1 for a in arrivals if a[0] > period),
            "endpoints": len(arrivals),
            "slowest": [[round(t, 2), cell, port] for t, cell, port in arrivals[:n]],
            "groups": endpoint_groups(arrivals, period)}


#: The report's name of each DRAM variant of the board design.
VARIANTS = {"onchip": "on-chip DRAM (bring-up)",
            "sdram": "SDRAM (LiteDRAM GENSDRPHY + controller)"}


def make_report(board: Board, cfg: VTAConfig, pnr: dict, synth: dict, top, *, seed: int,
                versions: dict, seconds: float, seeds_fmax: dict | None = None,
                levels: dict | None = None) -> dict:
    """The report of the build placed and routed with ``seed``; ``seeds_fmax`` is every seed
    tried with its core-clock Fmax (None: stopped as a laggard; only ``seed`` when absent);
    ``levels`` the synthesised netlist's :func:`~bitstreams.levels.lut_levels` (left out when
    absent)."""
    util = pnr.get("utilization", {})
    resources = {}
    for pnr_name, name in RESOURCES.items():
        u = util.get(pnr_name, {})
        resources[name] = [int(u.get("used", 0)), int(u.get("available", board.total(name)))]
    clocks = _clocks(pnr)
    return {
        "board": board.name, "device": board.device, "package": board.package,
        "speed_grade": board.speed, "config": {"name": cfg.name, **cfg.to_dict()},
        "design": {"variant": VARIANTS[getattr(top, "memory", "onchip")],
                   "dram_bytes": top.mem_bytes,
                   "clock_mhz": round(top.clk_hz / 1e6, 4), "baud": top.baud,
                   "uart_divisor": top.divisor},
        "resources": resources,
        "synthesis_estimate": synth,
        "clocks": clocks,
        "timing_met": all(c["fmax_mhz"] >= c["target_mhz"] for c in clocks.values()),
        "critical_paths": critical_paths(pnr),
        **({"slowest_endpoints": slow} if (slow := slowest_endpoints(pnr)) else {}),
        "seed": seed,
        "seeds": {str(k): v for k, v in (seeds_fmax or {seed: core_fmax(pnr)}).items()},
        "tools": versions, "build_seconds": round(seconds, 1),
        **({"lut_levels": {"max": levels["max"],
                           "histogram": {str(k): v for k, v in levels["histogram"].items()},
                           "worst": [[n, end] for n, end in levels["worst"]]}}
           if levels else {}),
    }


def levels_lines(lv: dict, worst: int = 5) -> list:
    """The readable lines of a netlist's LUT4-level summary (``lut_levels`` of a report)."""
    return ([f"LUT4 levels between registers: at most {lv['max']}; inputs per level "
             + ", ".join(f"{k}: {v}" for k, v in lv["histogram"].items())]
            + [f"  {n} levels into {end}" for n, end in lv["worst"][:worst]])


def summary_text(r: dict) -> str:
    lines = [f"VTA on {r['board']} ({r['device']}, speed grade {r['speed_grade']}), "
             f"configuration {r['config']['name']}",
             f"design: {r['design']['variant']}, {r['design']['dram_bytes']} bytes DRAM, "
             f"{r['design']['clock_mhz']} MHz, host link {r['design']['baud']} baud", "",
             f"{'resource':<12}{'used':>8}{'total':>8}{'':>3}"]
    for name, (used, total) in r["resources"].items():
        lines.append(f"{name:<12}{used:>8}{total:>8}{used / total:>6.0%}")
    lines += ["", f"{'clock':<12}{'Fmax MHz':>10}{'target':>8}"]
    for name, c in r["clocks"].items():
        ok = "ok" if c["fmax_mhz"] >= c["target_mhz"] else "FAILS"
        lines.append(f"{name:<12}{c['fmax_mhz']:>10.2f}{c['target_mhz']:>8.2f}  {ok}")
    for cp in r.get("critical_paths", []):
        lines += ["", f"critical path ({cp['delay_ns']} ns, {cp['logic_levels']} logic levels):",
                  f"  from {cp['start']}", f"  to   {cp['end']}"]
    slow = r.get("slowest_endpoints")
    if slow:
        lines += ["", f"endpoints arriving after the target's {slow['period_ns']} ns: "
                  f"{slow['over_period']} of {slow['endpoints']}; the slowest:"]
        lines += [f"  {t:6.2f} ns  {cell}.{port}" for t, cell, port in slow["slowest"][:10]]
        if slow.get("groups"):
            lines += ["by register (worst arrival, endpoints after the period):"]
            lines += [f"  {t:6.2f} ns {c:5d}  {name}" for t, c, name in slow["groups"]]
    if r.get("lut_levels"):
        lines += ["", *levels_lines(r["lut_levels"])]
    tried = r.get("seeds", {})
    others = (f" (the fastest of seeds {', '.join(tried)}: "
              f"{', '.join('stopped' if v is None else f'{v:.2f}' for v in tried.values())} MHz)"
              if len(tried) > 1 else "")
    lines += ["", f"seed {r['seed']}{others}, built in {r['build_seconds']:.0f} s",
              *[f"{k}: {v}" for k, v in r["tools"].items()]]
    return "\n".join(lines) + "\n"


def markdown_table(reports) -> str:
    """The README's configuration table from build reports (measured numbers only)."""
    rows = ["| configuration | GEMM (batch × in × out) | LUT4 | FF | DP16KD | MULT18X18D | "
            "Fmax (target) MHz | timing |", "|---|---|---|---|---|---|---|---|"]
    for r in reports:
        c = r["config"]
        block_in = 1 << c.get("LOG_BLOCK_IN", c.get("LOG_BLOCK", 0))
        block_out = 1 << c.get("LOG_BLOCK_OUT", c.get("LOG_BLOCK", 0))
        res = r["resources"]
        cells = [f"{res[k][0]} / {res[k][1]}" for k in ("LUT4", "FF", "DP16KD", "MULT18X18D")]
        clk = r["clocks"].get(CORE_CLOCK, {})
        rows.append(f"| `{c['name']}` | {1 << c['LOG_BATCH']} × {block_in} × {block_out} | "
                    + " | ".join(cells)
                    + f" | {clk.get('fmax_mhz', 0):.1f} ({clk.get('target_mhz', 0):.0f}) | "
                    + ("met" if r["timing_met"] else "**not met**") + " |")
    return "\n".join(rows)
