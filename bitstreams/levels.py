"""LUT4 levels between registers in a Yosys ECP5 netlist: the logic depth that, with routing
between spread blocks (~1.5 ns a level on the whole design), sets the clock.

``python -m bitstreams.levels NETLIST.json`` reads the JSON netlist of a build
(``bitstreams/<board>-<config>/build/vta_board.json``) or of a probe (``--work``), and prints
the histogram of levels over every register and block-RAM/DSP input, the registers with the
deepest inputs and the cells of the deepest paths.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

__all__ = ["lut_levels", "deepest_path", "by_register", "main"]

# Logic levels a cell adds: a LUT4 one; the wide multiplexers and carry cells add no LUT level.
_LEVELS = {"LUT4": 1, "PFUMX": 0, "L6MUX21": 0, "CCU2C": 0}


class _Graph:
    """The combinational cells of one module with their depth (LUT4 levels from a register)."""

    def __init__(self, netlist: dict, top: str | None):
        mods = netlist.get("modules")
        if not isinstance(mods, dict) or not mods:
            raise ValueError("not a Yosys JSON netlist (no 'modules')")
        if top is None:
            tops = [n for n, m in mods.items() if m.get("attributes", {}).get("top")]
            top = tops[0] if tops else next(iter(mods))
        if top not in mods:
            raise ValueError(f"no module {top!r} in the netlist (it has {', '.join(mods)})")
        self.module = mods[top]
        self.cells = self.module.get("cells", {})
        self.kind = {n: c["type"].rsplit("\\", 1)[-1] for n, c in self.cells.items()}
        self.driver = {}
        for name, c in self.cells.items():
            for port, bits in c["connections"].items():
                if c["port_directions"].get(port) == "output":
                    self.driver.update((b, name) for b in bits if isinstance(b, int))
        self.depth = {}
        for start in (n for n in self.cells if self.kind[n] in _LEVELS):
            stack = [start]
            while stack:                     # depth-first without recursion (long chains)
                name = stack[-1]
                feeds = self.feeds(name)
                todo = [f for f in feeds if f not in self.depth and f not in stack]
                if todo:
                    stack.extend(todo)
                    continue
                stack.pop()
                self.depth[name] = _LEVELS[self.kind[name]] + max(
                    (self.depth.get(f, 0) for f in feeds), default=0)

    def inputs(self, name):
        c = self.cells[name]
        return [b for port, bits in c["connections"].items()
                if c["port_directions"].get(port) == "input" for b in bits if isinstance(b, int)]

    def feeds(self, name):
        """The combinational cells driving ``name``'s inputs."""
        return [self.driver[b] for b in self.inputs(name)
                if self.kind.get(self.driver.get(b)) in _LEVELS]

    def ends(self):
        """(levels, "cell.port") of every input of a sequential or block cell fed by logic."""
        out = []
        for name, c in self.cells.items():
            if self.kind[name] in _LEVELS:
                continue
            for port, bits in c["connections"].items():
                if c["port_directions"].get(port) != "input":
                    continue
                levels = max((self.depth[self.driver[b]] for b in bits if isinstance(b, int)
                              and self.driver.get(b) in self.depth), default=None)
                if levels is not None:
                    out.append((levels, f"{name}.{port}"))
        out.sort(key=lambda e: (-e[0], e[1]))
        return out

    def net_names(self):
        """bit → the shortest visible net name holding it, with the bit's index there."""
        names = {}
        for net, info in self.module.get("netnames", {}).items():
            if info.get("hide_name"):
                continue
            for i, b in enumerate(info["bits"]):
                if isinstance(b, int) and (b not in names or len(net) < len(names[b][0])):
                    names[b] = (net, i)
        return names


def lut_levels(netlist: dict, top: str | None = None, worst: int = 5) -> dict:
    """LUT4 levels of the longest combinational path into every input of a sequential or
    block cell (flip-flop, block RAM, DSP) of Yosys' JSON ``netlist`` (module ``top``, by
    default the one marked top): ``{"max": n, "histogram": {levels: inputs}, "worst":
    [(levels, "cell.port"), ...]}``."""
    ends = _Graph(netlist, top).ends()
    histogram = Counter(levels for levels, _ in ends)
    return {"max": ends[0][0] if ends else 0, "histogram": dict(sorted(histogram.items())),
            "worst": ends[:worst]}


def deepest_path(netlist: dict, endpoint: str, top: str | None = None) -> list:
    """The cells of the deepest path into ``endpoint`` ("cell.port"), from the endpoint back
    to its registers: ``[(cell type, "net[bit]"), ...]``, the last entry the register side
    (``"register"``, the nets feeding the first logic cell)."""
    return _path(_Graph(netlist, top), endpoint)


def _path(g: _Graph, endpoint: str) -> list:
    cell, _, port = endpoint.rpartition(".")
    if cell not in g.cells or port not in g.cells[cell]["connections"]:
        raise ValueError(f"no input {endpoint!r} in the netlist")
    names = g.net_names()

    def label(b):
        net, i = names.get(b, ("?", 0))
        return f"{net}[{i}]"

    bits = [b for b in g.cells[cell]["connections"][port] if isinstance(b, int)
            and g.driver.get(b) in g.depth]
    path = []
    if not bits:
        return path
    bit = max(bits, key=lambda b: g.depth[g.driver[b]])
    while True:
        src = g.driver[bit]
        path.append((g.kind[src], label(bit)))
        feeds = [b for b in g.inputs(src) if g.driver.get(b) in g.depth]
        if not feeds:
            path.append(("register", ", ".join(label(b) for b in g.inputs(src)[:6])))
            return path
        bit = max(feeds, key=lambda b: g.depth[g.driver[b]])


def _register(end: str) -> str:
    """The design register an endpoint belongs to: Yosys' cell name without its mapping
    suffixes (``a.b.count_TRELLIS_FF_Q_3.DI`` → ``a.b.count``)."""
    cell = end.rpartition(".")[0]
    return re.sub(r"_\d+$", "", re.sub(r"(_TRELLIS_|\$).*", "", cell))


def by_register(ends: list, min_levels: int = 0) -> list:
    """``ends`` ((levels, "cell.port")) grouped by register, deepest first:
    ``[(register, {levels: inputs}), ...]`` for the inputs of ``min_levels`` or more."""
    groups = {}
    for levels, end in ends:
        if levels >= min_levels:
            groups.setdefault(_register(end), Counter())[levels] += 1
    rows = [(name, dict(sorted(c.items(), reverse=True))) for name, c in groups.items()]
    rows.sort(key=lambda r: (-max(r[1]), -sum(r[1].values()), r[0]))
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bitstreams.levels",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("netlist", type=Path, help="a Yosys JSON netlist (synth_ecp5 -json)")
    p.add_argument("--top", default=None, help="the module (default: the one marked top)")
    p.add_argument("--min", type=int, default=5, dest="min_levels",
                   help="list the registers with inputs of at least this many levels "
                        "(default 5)")
    p.add_argument("--registers", type=int, default=40,
                   help="at most this many registers (default 40)")
    p.add_argument("--paths", type=int, default=3,
                   help="print the cells of the N deepest paths (default 3)")
    args = p.parse_args(argv)
    try:
        graph = _Graph(json.loads(args.netlist.read_text()), args.top)
        graph_ends = graph.ends()
    except OSError as exc:
        print(f"levels: cannot read {args.netlist}: {exc.strerror}", file=sys.stderr)
        return 2
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        print(f"levels: {args.netlist} is not a usable Yosys JSON netlist ({exc})",
              file=sys.stderr)
        return 2
    histogram = Counter(levels for levels, _ in graph_ends)
    print(f"LUT4 levels between registers: at most {graph_ends[0][0] if graph_ends else 0}; "
          "inputs per level " + ", ".join(f"{k}: {v}" for k, v in sorted(histogram.items())))
    rows = by_register(graph_ends, args.min_levels)
    print(f"registers with inputs of {args.min_levels}+ levels: {len(rows)}")
    for name, counts in rows[:args.registers]:
        print(f"  {max(counts)}  {name}  (" + ", ".join(f"{n} of {k}" for k, n in
                                                      counts.items()) + ")")
    for levels, end in graph_ends[:args.paths]:
        print(f"deepest path into {end} ({levels} levels), back to its registers:")
        for kind, net in _path(graph, end):
            print(f"    {kind:8} {net}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:             # `| head`: the reader has what it wanted
        sys.stderr.close()
        sys.exit(0)
