"""Fuzzed inputs of the long-running commands, ``vta sweep`` and ``vta bitstream``: the real
space files and configurations, mutated, and the options that make them stop before the
expensive work (``--dry-run``, ``--check``, or an argument refused up front)."""

from __future__ import annotations

import json
import tempfile
import tomllib
from functools import lru_cache
from pathlib import Path

from hypothesis import strategies as st

from .inputs import ROOT, json_values, mutate_bytes, mutate_text, text_file

SPACES = ROOT / "designspace" / "spaces"


@lru_cache(maxsize=1)
def space_docs() -> tuple:
    """The shipped space files as parsed tables, and the example of docs/designspace.md."""
    docs = [tomllib.loads(p.read_text()) for p in sorted(SPACES.glob("*.toml"))]
    docs.append({"base": "small", "vars": {"DEPTH": [7, 9]},
                 "params": {"LOG_BLOCK_IN": [1, 2], "LOG_BLOCK_OUT": "LOG_BLOCK_IN",
                            "LOG_INP_BUFF_SIZE": "LOG_BATCH + LOG_BLOCK_IN + DEPTH",
                            "MEM_LATENCY": {"range": [4, 32, 28]},
                            "constraints": ["LOG_WGT_BUFF_SIZE >= LOG_INP_BUFF_SIZE"]},
                 "workloads": {"names": ["mlp"]}, "search": {"method": "nsga2", "trials": 4}})
    return tuple(docs)


def space_seeds() -> tuple[str, ...]:
    return tuple(p.read_text() for p in sorted(SPACES.glob("*.toml")))


#: Values that keep a space valid (small grids): what a user edits.
GOOD_ENTRIES = st.sampled_from([
    [1, 2, 3, 4, 5], [0, 1], 2, {"range": [4, 64, 4]}, {"range": [10, 12]}, "LOG_BATCH + 1",
    "max(LOG_BLOCK_IN, 2)", "LOG_BLOCK_IN * 2 - 1", "2 ** LOG_BATCH", [9, 10, 11], [64, 128]])
#: Values a careless space file holds where a key, a list, an expression or a range goes.
BAD_ENTRIES = st.sampled_from([
    "9 ** 9 ** 9 ** 9", "1 // (LOG_BATCH - LOG_BATCH)", "__import__('os').getcwd()",
    "LOG_BATCH +", "min(1)", "max()", "2 ** -1", "LOG_NOPE", "1 if LOG_BATCH else 2", "1.5",
    "'a'", "x" * 3000, "(" * 300 + "1" + ")" * 300, "+".join(["1"] * 600),
    "LOG_BLOCK_OUT", "DEPTH", "LOG_BATCH < 3 and LOG_BATCH",
    {"range": [0, 10 ** 12]}, {"range": [5, 1]}, {"range": [0, 10, 0]}, {"range": [0, 1 << 70]},
    {"range": [0, 400]}, {"range": [1, 2, 3, 4]}, {"range": "0..4"}, {"lo": 1},
    [], [1 << 70], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], [True], [1.5], ["1"],
    None, True, -1, 1 << 63,
])
_SECTIONS = ("params", "vars", "targets", "workloads", "synthesis", "search")
_TOP = {"base": st.sampled_from(["default", "nope", "/dev/zero", "", "../configs/small", 5]),
        "include": st.sampled_from([["nope"], ["/dev/zero"], "ecp5-small", [5], [], ["small"]])}
_KNOWN = {"targets": {"devices": st.sampled_from([["LFE5U-12F"], [], "LFE5U-85F", [1]])},
          "workloads": {"names": st.sampled_from([["nope"], [], "mlp", [["mlp"]]]),
                        "spatial_div": st.sampled_from([0, -4, 1 << 40, "4", 2.5])},
          "synthesis": {"margin": st.sampled_from([1, -0.5, float("inf"), "0.1", None]),
                        "fmax": st.sampled_from(["some", 1]),
                        "max_pnr": st.sampled_from([-1, 1 << 62, 0.5])},
          "search": {"method": st.sampled_from(["random", "nsga2", None]),
                     "trials": st.sampled_from([0, -1, 1 << 62, "10"]),
                     "seed": st.sampled_from([-1, 1 << 70, "s"])}}


@st.composite
def space_doc(draw) -> dict:
    """A space table with one to three structural mutations."""
    doc = json.loads(json.dumps(draw(st.sampled_from(space_docs()))))
    for _ in range(draw(st.integers(0, 3))):
        how = draw(st.sampled_from(("good", "good", "good", "entry", "entry", "known", "top",
                                    "unknown", "section", "drop", "nest")))
        section = draw(st.sampled_from(_SECTIONS))
        if how in ("good", "entry"):
            table = doc.setdefault("params" if draw(st.booleans()) else "vars", {})
            if not isinstance(table, dict):
                continue
            key = draw(st.sampled_from(sorted(table) + ["LOG_BATCH", "MEM_LATENCY", "DEPTH"]))
            table[key] = draw(GOOD_ENTRIES if how == "good" else BAD_ENTRIES | json_values)
        elif how == "known":
            name = draw(st.sampled_from(sorted(_KNOWN)))
            if isinstance(doc.get(name, {}), dict):
                key = draw(st.sampled_from(sorted(_KNOWN[name])))
                doc.setdefault(name, {})[key] = draw(_KNOWN[name][key])
        elif how == "top":
            key = draw(st.sampled_from(sorted(_TOP)))
            doc[key] = draw(_TOP[key])
        elif how == "unknown":
            target = doc if draw(st.booleans()) else doc.get(section)
            if isinstance(target, dict):
                target[draw(st.text(max_size=10))] = draw(json_values)
        elif how == "section":
            doc[section] = draw(json_values)
        elif how == "drop" and doc:
            doc.pop(draw(st.sampled_from(sorted(doc))))
        elif how == "nest":       # nested lists, written into the text by space_file
            doc[section] = _NEST
    return doc


_NEST = "@nest@"


@st.composite
def space_file(draw) -> dict:
    """``{"space.toml" | "space.json": bytes}``: a shipped space mutated as TOML text, or in
    structure written as JSON (possibly mutated again as text or bytes)."""
    if draw(st.integers(0, 2)) == 0:
        return {"space.toml": draw(text_file(space_seeds(), nest="[", unnest="]"))}
    text = json.dumps(draw(space_doc()), indent=1)
    depth = draw(st.sampled_from([70, 3000, 100000]))
    text = text.replace(f'"{_NEST}"', "[" * depth + "]" * depth)
    if draw(st.integers(0, 4)) == 0:
        text = draw(mutate_text(text, nest="[", unnest="]"))
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 5)) == 0:
        data = draw(mutate_bytes(data))
    return {"space.json": data}


def space_refused(files: dict) -> bool:
    """True if ``vta sweep`` refuses this space file before running anything."""
    from designspace.space import SpaceError, expand, load_space

    (name, data), = files.items()
    with tempfile.TemporaryDirectory(prefix="vta-fuzz-space-") as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        try:
            expand(load_space(path))
        except SpaceError:
            return True
    return False


#: Options of a sweep that a careless script passes, each refused up front or harmless.
SWEEP_OPTIONS = st.lists(st.sampled_from([
    ["--jobs", "0"], ["--jobs", "-2"], ["--jobs", "x"], ["--synthesis", "fast"], ["--no-plots"],
    ["--no-cache"], ["--synthesis", "model"], ["--jobs", "1"]]), max_size=2).map(
    lambda xs: [a for x in xs for a in x])


# ------------------------------------------------------------------------------ bitstream
def bitstream_seeds() -> tuple[str, ...]:
    return tuple(p.read_text() for p in sorted((ROOT / "isa" / "configs").glob("ecp5-small.*")))


#: Fields of a configuration that decide whether it fits, with values near and past the edge.
_FIT_VALUES = {"LOG_BLOCK": [2, 3, 4, 5, 6],
               "LOG_BATCH": [0, 1, 3], "LOG_INP_BUFF_SIZE": [12, 15, 18, 30],
               "LOG_ACC_BUFF_SIZE": [14, 17, 20], "LOG_WGT_BUFF_SIZE": [15, 18, 22],
               "LOG_BUS_WIDTH": [3, 6, 9], "TARGET_MHZ": [0, 1, 25, 1000, 1e9, -5, 60.5]}


@st.composite
def bitstream_config(draw) -> bytes:
    """ecp5-small.json mutated: a field moved to or past the device's edge, or any JSON
    mutation (structure, digits, nesting, text, bytes)."""
    seed = draw(st.sampled_from(bitstream_seeds()))
    doc = json.loads(seed)
    how = draw(st.sampled_from(("none", "fit", "fit", "fit", "value", "drop", "add", "text",
                                "bytes")))
    if how == "none":
        text = seed
    elif how == "fit":
        for _ in range(draw(st.integers(1, 2))):
            key = draw(st.sampled_from(sorted(_FIT_VALUES)))
            doc[key] = draw(st.sampled_from(_FIT_VALUES[key]))
        text = json.dumps(doc)
    elif how == "value":
        doc[draw(st.sampled_from(sorted(doc)))] = draw(json_values)
        text = json.dumps(doc)
    elif how == "drop":
        doc.pop(draw(st.sampled_from(sorted(doc))))
        text = json.dumps(doc)
    elif how == "add":
        doc[draw(st.text(max_size=12))] = draw(json_values)
        text = json.dumps(doc)
    else:
        text = draw(mutate_text(json.dumps(doc, indent=1), nest="[", unnest="]"))
    data = text.encode("utf-8", "surrogatepass")
    return draw(mutate_bytes(data)) if how == "bytes" else data


#: Options refused before anything is built, whatever the configuration.
BITSTREAM_REFUSED = st.sampled_from([
    ["--dram-kib", "0"], ["--dram-kib", "-64"], ["--dram-kib", "48"], ["--dram-kib", "x"],
    ["--dram-kib", "65536", "--memory", "sdram"], ["--seed", "-1"], ["--seed", "9" * 40],
    ["--seed", "1.5"], ["--board", "ulx3s-12f"], ["--board", ""], ["--memory", "ddr"]])
#: Options that may be fine: with --check nothing is built either way.
BITSTREAM_OPTIONS = st.lists(st.sampled_from([
    ["--dram-kib", "64"], ["--dram-kib", "1048576"], ["--dram-kib", "1"], ["--seed", "7"],
    ["--memory", "sdram"], ["--memory", "onchip"], ["--board", "ulx3s-85f"],
    ["--dram-kib", "512"]]) | BITSTREAM_REFUSED, max_size=2).map(
    lambda xs: [a for x in xs for a in x])


def no_tools(tmp: Path) -> dict:
    """The environment of a fuzzed ``vta bitstream``: FPGA tools that do not exist, so a
    build that got past its up-front checks fails with a tool error (exit 3, a failure of the
    fuzz test) instead of running Yosys for minutes."""
    return {var: str(tmp / "no-such-tool" / var.lower())
            for var in ("YOSYS", "NEXTPNR_ECP5", "ECPPACK")}
