"""The fuzz table: each ``vta`` command, how to build its command line from fuzzed files, the
exit statuses it may answer with, and how many examples the default run tries.

To fuzz a new command, add a :class:`FuzzCommand` row: a strategy drawing the input files
(``{"name": bytes}``) and extra arguments, and ``argv(tmp, files, out)`` building the command
line. The harness checks the rest (tests/fuzz/harness.py): the output given by ``out`` and any
``more_outputs`` are left whole or not at all; ``env`` sets variables for the call (a cache
location). The model commands draw real models mutated in their bytes and structure
(tests/fuzz/models.py). The long-running commands, ``sweep`` and ``bitstream``, take their
real space files and configurations mutated (tests/fuzz/builds.py) and stop before the
expensive work: ``--dry-run`` / ``--check``, or, without them, an input or option that must
be refused up front (``out_kinds`` limits where ``--out`` points; the bitstream rows run with
FPGA tools that do not exist, so a build that started would fail the test).

Such commands read with :mod:`isa.safeio` (bounded, UTF-8, pickle-free, atomic outputs) and
raise exceptions carrying an ``exit_code`` (:mod:`isa.errors`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from hypothesis import strategies as st

from isa.errors import EXIT_OK, EXIT_REJECTED, EXIT_TIMEOUT, EXIT_USAGE

from . import builds, inputs, models
from .harness import OUT_KINDS

ANY = {EXIT_OK, EXIT_REJECTED, EXIT_USAGE}
INPUT = {EXIT_OK, EXIT_USAGE}          # commands that only read files: no program is run


@dataclass
class FuzzCommand:
    name: str
    files: Callable[[], st.SearchStrategy]          # -> {"file name": bytes}
    argv: Callable[[Path, dict, Path], list]        # (tmp, {name: path}, out) -> argv
    allowed: set = field(default_factory=lambda: set(ANY))
    examples: int = 40
    extra: Callable[[], st.SearchStrategy] = lambda: st.just([])   # more arguments
    out_name: str = "out.npz"                                      # the output file's name
    more_outputs: tuple = ()          # other files (in tmp) it writes: none may be left on failure
    env: Callable[[Path], dict] = lambda tmp: {}                   # environment for the call
    out_kinds: tuple = OUT_KINDS      # where --out may point (harness.OUT_KINDS)


def _one(name: str, strategy) -> Callable[[], st.SearchStrategy]:
    return lambda: strategy.map(lambda data: {name: data})


#: Option values that a careless script passes.
TIMEOUTS = st.sampled_from(["nan", "-1", "0", "inf", "1e309", "abc", "", "2", "0.5"])
CONFIG_NAMES = st.sampled_from(["small", "default", "nope", "../configs/small", "", "a" * 5000,
                                "/dev/null", "/dev/zero", "."])

def _invalid_config(text: str) -> bool:
    """True if the configuration is rejected (elaborating a valid one takes seconds)."""
    from isa.config import VTAConfig
    from isa.errors import InputError

    try:
        VTAConfig.from_json(text)
    except InputError:
        return True
    return False


SIM_OPTIONS = st.lists(st.sampled_from([
    ["--size", "0"], ["--size", "-16"], ["--size", "7"], ["--size", "9" * 60],
    ["--size", "1048576"], ["--backend", "gpu"], ["--config", "nope"], ["--config", "/dev/zero"],
    ["--size", "16"]]), min_size=1, max_size=3).map(lambda xs: [a for x in xs for a in x])

TABLE = [
    FuzzCommand("run functional", _one("image.npz", inputs.image_file()),
                lambda tmp, f, out: ["run", f["image.npz"], "--out", out, "--timeout", "3"],
                allowed=ANY | {EXIT_TIMEOUT}, examples=60),
    FuzzCommand("run cycle", _one("image.npz", inputs.image_file()),
                lambda tmp, f, out: ["run", f["image.npz"], "--backend", "cycle", "--out", out,
                                     "--timeout", "3"],
                allowed=ANY | {EXIT_TIMEOUT}, examples=30),
    FuzzCommand("run options", _one("image.npz", st.sampled_from(inputs.image_seeds())),
                lambda tmp, f, out: ["run", f["image.npz"], "--out", out],
                allowed=ANY, examples=15,
                extra=lambda: st.lists(st.sampled_from([
                    ["--timeout", "nan"], ["--timeout", "-1"], ["--timeout", "inf"],
                    ["--timeout", "0"], ["--link", "usb"], ["--backend", "gpu"],
                    ["--schedule", "random"], ["--seed", "9" * 5000], ["--check-races"],
                    ["--trace", "/nonexistent/t.json"], ["--backend", "cycle"]]),
                    max_size=3).map(lambda xs: [a for x in xs for a in x])),
    FuzzCommand("asm", _one("prog.s", inputs.text_file(inputs.asm_seeds())),
                lambda tmp, f, out: ["asm", f["prog.s"], "-o", out, "--config", "small"],
                allowed=INPUT, examples=120, out_name="out.bin"),
    FuzzCommand("disasm", lambda: st.one_of(
                    inputs.image_file().map(lambda d: {"prog.npz": d}),
                    st.binary(max_size=200).map(lambda d: {"prog.bin": d})),
                lambda tmp, f, out: ["disasm", *f.values(), "--numbered"],
                allowed=INPUT, examples=60),
    FuzzCommand("config", _one("cfg.json", inputs.config_text().map(
                    lambda t: t.encode("utf-8", "surrogatepass"))),
                lambda tmp, f, out: ["config", f["cfg.json"]],
                allowed=INPUT, examples=80),
    FuzzCommand("config name", lambda: st.just({}),
                lambda tmp, f, out: ["config"], allowed=INPUT, examples=9,
                extra=lambda: CONFIG_NAMES.map(lambda n: [n])),
    FuzzCommand("relay check", _one("p.rly", inputs.text_file(inputs.relay_seeds())),
                lambda tmp, f, out: ["relay", "check", f["p.rly"]], examples=60),
    FuzzCommand("relay print", _one("p.rly", inputs.text_file(inputs.relay_seeds()[:3])),
                lambda tmp, f, out: ["relay", "print", f["p.rly"], "-o", out], examples=30,
                out_name="out.rly"),
    FuzzCommand("relay run", lambda: st.fixed_dictionaries({
                    "p.rly": inputs.text_file(inputs.RELAY_SMALL), "x.npy": inputs.npy_file()}),
                lambda tmp, f, out: ["relay", "run", f["p.rly"], "--input", f"x={f['x.npy']}",
                                     "--out", out], examples=40),
    FuzzCommand("verilog", _one("cfg.json", inputs.config_text().filter(_invalid_config).map(
                    lambda t: t.encode("utf-8", "surrogatepass"))),
                lambda tmp, f, out: ["verilog", "--config", f["cfg.json"], "-o", out],
                allowed={EXIT_USAGE}, examples=20, out_name="out.v"),
    FuzzCommand("sim", lambda: st.just({}),
                lambda tmp, f, out: ["sim", "--workload", "gemm", "--quick", "--config", "tiny"],
                allowed=ANY, examples=10, extra=lambda: SIM_OPTIONS),
    FuzzCommand("compile", lambda: st.fixed_dictionaries({
                    "m.rly": inputs.text_file((inputs.compiled_seed()["text"],)),
                    "p.npz": inputs.params_file()}),
                lambda tmp, f, out: ["compile", f["m.rly"], "--params", f["p.npz"], "-o", out,
                                     "--config", "small"],
                examples=25, out_name="out.vtab"),
    FuzzCommand("inspect", _one("m.vtab", inputs.vtab_file()),
                lambda tmp, f, out: ["inspect", f["m.vtab"]], allowed=INPUT, examples=40),
    FuzzCommand("run vtab", lambda: st.fixed_dictionaries({
                    "m.vtab": inputs.vtab_file(), "x.npy": inputs.model_input()}),
                lambda tmp, f, out: ["run", f["m.vtab"], "--input",
                                     f"{inputs.compiled_seed()['input_name']}={f['x.npy']}",
                                     "--out", out],
                allowed=ANY | {EXIT_TIMEOUT}, examples=40,
                extra=lambda: st.lists(TIMEOUTS.map(lambda t: ["--timeout", t]) | st.just(
                    ["--backend", "cycle"]), max_size=2).map(lambda xs: [a for x in xs for a in x])),
    # The model commands: real models mutated (tests/fuzz/models.py) and calibration data.
    FuzzCommand("import onnx", _one("m.onnx", models.onnx_file()),
                lambda tmp, f, out: ["import", f["m.onnx"], "-o", out, "--params-out",
                                     tmp / "params.npz"],
                examples=40, out_name="out.rly", more_outputs=("params.npz",),
                extra=lambda: models.SHAPE_OPTIONS),
    FuzzCommand("import pt2", _one("m.pt2", models.pt2_file()),
                lambda tmp, f, out: ["import", f["m.pt2"], "-o", out, "--params-out",
                                     tmp / "params.npz"],
                examples=8, out_name="out.rly", more_outputs=("params.npz",)),
    FuzzCommand("quantize onnx", lambda: st.fixed_dictionaries({
                    "m.onnx": models.onnx_file(), "cal.npz": models.calibration_file()}),
                lambda tmp, f, out: ["quantize", f["m.onnx"], "--calibrate", f["cal.npz"],
                                     "-o", out],
                examples=25, out_name="out.rly", extra=lambda: models.QUANTIZE_OPTIONS),
    FuzzCommand("quantize pt2", lambda: st.fixed_dictionaries({
                    "m.pt2": models.pt2_file(), "cal.npz": models.calibration_file("x")}),
                lambda tmp, f, out: ["quantize", f["m.pt2"], "--calibrate", f["cal.npz"],
                                     "-o", out],
                examples=6, out_name="out.rly"),
    FuzzCommand("compile onnx", lambda: st.fixed_dictionaries({
                    "m.onnx": models.onnx_file(), "cal.npz": models.calibration_file()}),
                lambda tmp, f, out: ["compile", f["m.onnx"], "--calibrate", f["cal.npz"],
                                     "-o", out, "--config", "small"],
                examples=12, out_name="out.vtab", extra=lambda: models.QUANTIZE_OPTIONS),
    FuzzCommand("compile pt2", lambda: st.fixed_dictionaries({
                    "m.pt2": models.pt2_file(), "cal.npz": models.calibration_file("x")}),
                lambda tmp, f, out: ["compile", f["m.pt2"], "--calibrate", f["cal.npz"],
                                     "-o", out, "--config", "small"],
                examples=5, out_name="out.vtab"),
    FuzzCommand("tune", lambda: st.fixed_dictionaries({
                    "m.rly": inputs.text_file((inputs.compiled_seed()["text"],)),
                    "p.npz": inputs.params_file(), "tune.json": models.tuning_cache()}),
                lambda tmp, f, out: ["tune", f["m.rly"], "--params", f["p.npz"], "--config",
                                     "small", "--top", "1"],
                examples=12, extra=lambda: models.TUNE_OPTIONS,
                env=lambda tmp: {"VTA_TUNE_CACHE": tmp / "tune.json"}),
    # The long-running commands, stopped before the work (tests/fuzz/builds.py). An existing
    # folder is a valid --out for both (replaced / built into), hence no "dir" out kind.
    FuzzCommand("sweep dry-run", builds.space_file,
                lambda tmp, f, out: ["sweep", "--space", *f.values(), "--out", out,
                                     "--cache", tmp / "cache", "--no-progress", "--dry-run"],
                allowed=INPUT, examples=200, out_name="results", extra=lambda: builds.SWEEP_OPTIONS,
                out_kinds=("new", "new", "new", "existing", "missing-dir"),
                more_outputs=("cache",)),
    FuzzCommand("sweep refused out", builds.space_file,
                lambda tmp, f, out: ["sweep", "--space", *f.values(), "--out", out,
                                     "--cache", tmp / "cache", "--no-progress"],
                allowed={EXIT_USAGE}, examples=30, out_name="results",
                out_kinds=("existing", "missing-dir"), more_outputs=("cache",)),
    FuzzCommand("sweep refused space", lambda: builds.space_file().filter(builds.space_refused),
                lambda tmp, f, out: ["sweep", "--space", *f.values(), "--out", out,
                                     "--cache", tmp / "cache", "--no-progress"],
                allowed={EXIT_USAGE}, examples=40, out_name="results",
                out_kinds=("new",), more_outputs=("cache",)),
    FuzzCommand("bitstream check", _one("cfg.json", builds.bitstream_config()),
                lambda tmp, f, out: ["bitstream", "--config", f["cfg.json"], "--out", out,
                                     "--quiet", "--check"],
                allowed=ANY, examples=120, out_name="bits", extra=lambda: builds.BITSTREAM_OPTIONS,
                out_kinds=("new", "new", "new", "existing", "missing-dir"), env=builds.no_tools),
    FuzzCommand("bitstream refused", _one("cfg.json", builds.bitstream_config()),
                lambda tmp, f, out: ["bitstream", "--config", f["cfg.json"], "--out", out,
                                     "--quiet"],
                allowed={EXIT_USAGE}, examples=40, out_name="bits",
                extra=lambda: builds.BITSTREAM_REFUSED,
                out_kinds=("new", "existing", "missing-dir"), env=builds.no_tools),
    FuzzCommand("trace-plot", _one("t.json", inputs.trace_file()),
                lambda tmp, f, out: ["trace-plot", f["t.json"], "-o", out],
                allowed=INPUT, examples=14, out_name="out.png"),
]
