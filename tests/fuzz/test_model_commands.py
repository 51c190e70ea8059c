"""Regressions the model rows of the fuzz table found, and the contracts around them: ``vta
import``/``quantize``/``compile`` on broken models and paths, ``vta run MODEL.vtab --timeout``
on every backend, the runner registry, and the layering (relay imports nothing of isa)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from isa.errors import EXIT_OK, EXIT_REJECTED, EXIT_TIMEOUT, EXIT_USAGE
from vta.cli import file_kind, main, runners

from .harness import check, run_vta
from .inputs import ROOT

pytest.importorskip("onnx")

DIGITS = ROOT / "examples" / "digits_cnn.onnx"


def _one_error_line(capfd, prefix: str) -> str:
    """What the command printed on the real stderr (file descriptor 2, where libraries' loggers
    write too): exactly one line, starting ``prefix``."""
    err = capfd.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), err[-3000:]
    return lines[0]


def test_an_initializer_whose_data_does_not_fit_its_shape_is_an_input_error(tmp_path, capfd):
    import onnx

    model = onnx.load(DIGITS)
    init = next(i for i in model.graph.initializer if i.name == "fc.weight")
    init.dims[0] = 1 << 20                       # the data holds 10 x 512 floats
    onnx.save(model, tmp_path / "m.onnx")
    code = main(["import", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.rly"),
                 "--params-out", str(tmp_path / "m.npz")])
    line = _one_error_line(capfd, "vta import: error: ")
    assert code == EXIT_USAGE and "initializer 'fc.weight'" in line and "[1048576, 512]" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


def test_a_corrupted_pt2_gives_one_line_without_library_noise(tmp_path, capfd):
    """torch.export logged a traceback (on file descriptor 2) before retrying, and torch raised
    FutureWarnings; the command's own line came after them."""
    import warnings

    pytest.importorskip("torch")
    from .models import pt2_seed

    data = bytearray(pt2_seed())
    at = data.index(b"archive/models/model.json") - 30       # its local file header
    assert data[at:at + 4] == b"PK\x03\x04"
    data[at:at + 4] = b"XXXX"
    (tmp_path / "m.pt2").write_bytes(bytes(data))
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        code = main(["import", str(tmp_path / "m.pt2"), "-o", str(tmp_path / "m.rly"),
                     "--params-out", str(tmp_path / "m.npz")])
    line = _one_error_line(capfd, "vta import: error: ")
    assert code == EXIT_USAGE and "torch.export program" in line
    assert not shown, [str(w.message) for w in shown]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pt2"]


@pytest.mark.parametrize("node_input,message", [
    ("", "a required input is missing"),                        # was KeyError: None
    ("fc.weight", "layout NCHW has 4 axes but the tensor has rank 2"),   # was numpy's ValueError
])
def test_a_conv_fed_a_wrong_input_is_an_input_error(tmp_path, node_input, message):
    import onnx

    model = onnx.load(DIGITS)
    model.graph.node[0].input[0] = node_input
    onnx.save(model, tmp_path / "m.onnx")
    result = run_vta(["import", tmp_path / "m.onnx", "-o", tmp_path / "m.rly", "--params-out",
                      tmp_path / "m.npz"], outputs=[tmp_path / "m.rly", tmp_path / "m.npz"])
    check(result, {EXIT_USAGE}, name="regression")
    assert "node 0 '/conv1/Conv' (Conv)" in result.err and message in result.err


@pytest.mark.parametrize("attr,value", [("strides", [0, 1]), ("dilations", [1, -1]),
                                        ("pads", [1, -1, 1, 1]), ("strides", [1])])
@pytest.mark.parametrize("command", ["import", "quantize"])
def test_a_conv_window_that_is_not_valid_onnx_is_an_input_error(tmp_path, attr, value, command):
    """A stride of 0 was a ZeroDivisionError (exit 3) in `vta quantize`."""
    import numpy as np
    import onnx

    model = onnx.load(DIGITS)
    for a in model.graph.node[0].attribute:
        if a.name == attr:
            a.ints[:] = value
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "cal.npz", image=np.zeros((2, 1, 8, 8), np.float32))
    argv = (["import", tmp_path / "m.onnx", "--params-out", tmp_path / "m.npz"]
            if command == "import" else ["quantize", tmp_path / "m.onnx", "--calibrate",
                                         tmp_path / "cal.npz"])
    result = run_vta(argv + ["-o", tmp_path / "m.rly"],
                     outputs=[tmp_path / "m.rly", tmp_path / "m.npz"])
    check(result, {EXIT_USAGE}, name="regression")
    assert "node 0 '/conv1/Conv' (Conv)" in result.err and "must be 2 positive" in result.err


@pytest.mark.parametrize("out,message", [
    (".", "it is a directory"), ("no/m.rly", "does not exist"), ("m.npz", "the same file")])
def test_import_checks_its_outputs_before_the_work(tmp_path, capfd, monkeypatch, out, message):
    import relay.frontend as frontend

    def never(*a, **k):
        raise AssertionError("the model was imported before the outputs were checked")

    monkeypatch.setattr(frontend, "load_model", never)
    code = main(["import", str(DIGITS), "-o", str(tmp_path / out), "--params-out",
                 str(tmp_path / "m.npz")])
    assert code == EXIT_USAGE and message in _one_error_line(capfd, "vta import: error: ")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [
    ["import", "/dev/zero", "-o", "{t}/m.rly", "--params-out", "{t}/m.npz"],
    ["quantize", "/dev/zero", "--calibrate", "{t}/c.npz", "-o", "{t}/q.rly"],
    ["compile", "/dev/zero", "--calibrate", "{t}/c.npz", "-o", "{t}/q.vtab"],
    ["quantize", str(DIGITS), "--calibrate", "/dev/zero", "-o", "{t}/q.rly"],
    ["quantize", str(DIGITS), "--calibrate", "{t}", "-o", "{t}/q.rly"],
])
def test_devices_and_directories_as_model_inputs(tmp_path, argv):
    """Refused at once with exit 2 (an unbounded read of /dev/zero used to be the answer)."""
    result = run_vta([a.format(t=tmp_path) for a in argv],
                     outputs=[tmp_path / "m.rly", tmp_path / "q.rly", tmp_path / "q.vtab"])
    check(result, {EXIT_USAGE}, name="regression")
    assert result.seconds < 30


def test_quantize_refuses_a_calibration_archive_that_needs_pickle(tmp_path, capfd):
    np.savez(tmp_path / "c.npz", image=np.array([{"a": 1}], dtype=object))
    code = main(["quantize", str(DIGITS), "--calibrate", str(tmp_path / "c.npz"), "-o",
                 str(tmp_path / "q.rly")])
    line = _one_error_line(capfd, "vta quantize: error: cannot read calibration data")
    assert code == EXIT_USAGE and "never unpickled" in line
    assert not (tmp_path / "q.rly").exists()


@pytest.mark.parametrize("scale,code,message", [
    (np.inf, EXIT_USAGE, "holds NaN or infinite values"), (np.nan, EXIT_USAGE, "holds NaN or infinite values"),
    (1e38, EXIT_USAGE, "reaches inf in float32"),        # was a hang: an unbounded shift
    # Was an internal error (OverflowError), then a shift refused after a bias clipped in
    # silence; now the first bias the accumulator scale 2^-111 cannot hold is refused, saying why.
    (1e-30, EXIT_REJECTED, "nn.conv2d layer 0 does not fit int32: its bias of channel"),
])
def test_quantize_refuses_calibration_data_no_int8_scale_fits(tmp_path, capfd, scale, code, message):
    x = np.random.default_rng(0).uniform(0, 1, (4, 1, 1, 8, 8)).astype("float32")
    if np.isfinite(scale):
        x = x * np.float32(scale)
    else:
        x.flat[5] = scale
    np.savez(tmp_path / "c.npz", image=x)
    result = run_vta(["quantize", DIGITS, "--calibrate", tmp_path / "c.npz", "-o",
                      tmp_path / "q.rly"], outputs=[tmp_path / "q.rly"])
    check(result, {code}, name="regression")
    assert message in result.err and result.seconds < 60
    if code == EXIT_REJECTED:
        assert "= input 2^-106 x weights 2^-5" in result.err and "calibration data far smaller" in result.err


# ------------------------------------------------------------------------------ vta run .vtab
@pytest.fixture(scope="module")
def digits_vtab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vtab")
    x = np.random.default_rng(0).uniform(0, 1, (4, 1, 1, 8, 8)).astype("float32")
    np.savez(tmp / "cal.npz", image=x)
    np.save(tmp / "x.npy", x[0])
    assert main(["compile", str(DIGITS), "--calibrate", str(tmp / "cal.npz"), "-o",
                 str(tmp / "d.vtab"), "--config", "small"]) == EXIT_OK
    assert main(["run", str(tmp / "d.vtab"), "--input", f"image={tmp / 'x.npy'}", "--out",
                 str(tmp / "ref.npz")]) == EXIT_OK
    return tmp


@pytest.mark.parametrize("backend", ["functional", "cycle", "rtl"])
def test_vtab_timeout_on_every_backend(digits_vtab, tmp_path, capfd, backend):
    if backend == "rtl":
        from driver.backends import BackendUnavailable, get_backend
        try:
            get_backend("rtl").check_available()
        except BackendUnavailable as exc:
            pytest.skip(f"rtl backend unavailable: {exc}")
    run = ["run", str(digits_vtab / "d.vtab"), "--input", f"image={digits_vtab / 'x.npy'}",
           "--backend", backend]
    if backend != "rtl":    # (tests/compiler checks the RTL's outputs; it is the slow one)
        # Generous: the same outputs as the run without a timeout.
        assert main(run + ["--out", str(tmp_path / "ok.npz"), "--timeout", "3000"]) == EXIT_OK
        np.testing.assert_array_equal(np.load(tmp_path / "ok.npz")["output_0"],
                                      np.load(digits_vtab / "ref.npz")["output_0"])
    capfd.readouterr()
    # Too short: exit 4, one line naming the segment that was running, no output file.
    code = main(run + ["--out", str(tmp_path / "late.npz"), "--timeout", "0.001"])
    line = _one_error_line(capfd, "vta run: error: the model did not finish within 0.001 s: "
                                  "segment ")
    assert code == EXIT_TIMEOUT and f"on {backend}" in line
    assert not (tmp_path / "late.npz").exists()


def test_vtab_timeout_must_be_a_positive_number(digits_vtab, tmp_path):
    for value in ("nan", "-1", "0", "inf", "abc"):
        result = run_vta(["run", digits_vtab / "d.vtab", "--input",
                          f"image={digits_vtab / 'x.npy'}", "--out", tmp_path / "o.npz",
                          "--timeout", value], outputs=[tmp_path / "o.npz"])
        check(result, {EXIT_USAGE}, name="regression")


def test_run_routes_file_kinds_through_the_registry():
    assert file_kind("a/B.VTAB") == "vtab" and file_kind("image.npz") == "npz"
    from compiler.cli import run_vtab_main
    assert runners()["vtab"][0] is run_vtab_main
    assert "npz" not in runners()               # program images stay with the driver


def test_layering_of_the_command_modules():
    """relay (frontends, quantiser and their file-level steps) imports nothing of isa; the
    driver's commands import nothing of the compiler (SPEC §1)."""
    code = ("import sys, relay.frontend.cli, relay.quantize.cli, relay.frontend.onnx\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('isa', 'driver', "
            "'compiler', 'sim', 'hw'))\nassert not bad, bad\n"
            "import driver.cli\nassert 'compiler' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


# ------------------------------------------------------------------------------ vta tune
@pytest.fixture(scope="module")
def tune_files(tmp_path_factory):
    from .inputs import COMPILER_PROGRAM, compiled_seed
    from .models import tuning_seed

    tmp = tmp_path_factory.mktemp("tune")
    (tmp / "p.npz").write_bytes(compiled_seed()["params"])
    return COMPILER_PROGRAM, tmp / "p.npz", tuning_seed()


@pytest.mark.parametrize("top", ["0", "-1", "x", "9" * 50])
def test_tune_top_must_be_at_least_one(tune_files, tmp_path, top):
    model, params, _ = tune_files
    result = run_vta(["tune", model, "--params", params, "--config", "small", "--top", top],
                     env={"VTA_TUNE_CACHE": tmp_path / "t.json"}, outputs=[tmp_path / "t.json"])
    check(result, {EXIT_USAGE}, name="regression")      # --top 0 was an internal error
    assert "--top" in result.err


@pytest.mark.parametrize("cache", ["{t}", "/dev/null/t.json"])
def test_an_unwritable_tuning_cache_is_refused_before_tuning(tune_files, tmp_path, cache):
    model, params, _ = tune_files
    for argv in (["tune", model, "--params", params, "--config", "small", "--top", "1"],
                 ["compile", model, "--params", params, "--config", "small", "--tune", "-o",
                  tmp_path / "m.vtab"]):
        result = run_vta(argv, env={"VTA_TUNE_CACHE": cache.format(t=tmp_path)},
                         outputs=[tmp_path / "m.vtab"])
        check(result, {EXIT_USAGE}, name="regression")
        assert "tuning cache" in result.err and result.seconds < 30


def test_a_damaged_tuning_cache_entry_is_tuned_again(tune_files, tmp_path):
    import json

    model, params, seed = tune_files
    doc = json.loads(seed)
    for entry in doc.values():
        entry["schedule"]["tco"] = 1 << 40           # no such tiling: the lowering would fail
    (tmp_path / "t.json").write_text(json.dumps(doc))
    result = run_vta(["compile", model, "--params", params, "--config", "small", "--tune", "-o",
                      tmp_path / "m.vtab"], env={"VTA_TUNE_CACHE": tmp_path / "t.json"})
    check(result, {EXIT_OK}, name="regression")
    tuned = json.loads((tmp_path / "t.json").read_text())
    assert set(tuned) == set(doc) and all(e["schedule"]["tco"] < 1 << 40 for e in tuned.values())


# ------------------------------------------------------------------------------ vta relay
@pytest.mark.parametrize("depth", [3_000, 20_000])
def test_relay_modules_nested_deeply_parse_or_give_a_positioned_error(tmp_path, depth):
    """A module (not just an expression) parses on relay.depth's big stack: 20,000 levels was a
    RecursionError (an internal error), 3,000 must work."""
    (tmp_path / "p.rly").write_text('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2, 2), float32]) '
                                    "{\n  add(%x, " + "(" * depth + "0f" + ")" * depth + ")\n}\n")
    result = run_vta(["relay", "check", tmp_path / "p.rly"])
    if depth <= 5_000:
        check(result, {EXIT_OK}, name="regression")
    else:
        check(result, {EXIT_USAGE}, name="regression")
        assert "p.rly:3:5010: expressions, types or patterns nested more than 5000" in result.err


def test_tune_of_an_operator_no_schedule_fits_is_a_rejection(tune_files, tmp_path):
    """A batch of 0 leaves no schedule: compile said DoesNotFit (exit 1), tune said min() of
    an empty sequence (an internal error)."""
    model, params, _ = tune_files
    (tmp_path / "m.rly").write_text(model.read_text().replace("Tensor[(1, 3, 8, 8), int8]",
                                                              "Tensor[(0, 3, 8, 8), int8]"))
    for argv in (["tune", tmp_path / "m.rly", "--top", "1"],
                 ["compile", tmp_path / "m.rly", "-o", tmp_path / "m.vtab"]):
        result = run_vta(argv + ["--params", params, "--config", "small"],
                         env={"VTA_TUNE_CACHE": tmp_path / "t.json"}, outputs=[tmp_path / "m.vtab"])
        check(result, {EXIT_REJECTED}, name="regression")
        assert "vta0: no schedule fits" in result.err


def test_tune_checks_its_parameters_like_compile(tune_files, tmp_path):
    """A parameter of another dtype or shape was an internal error in tune (unknown dtype)."""
    model, params, _ = tune_files
    arrays = dict(np.load(params))
    arrays["w2"] = np.array(["a", "b"])
    np.savez(tmp_path / "p.npz", **arrays)
    result = run_vta(["tune", model, "--params", tmp_path / "p.npz", "--config", "small",
                      "--top", "1"], env={"VTA_TUNE_CACHE": tmp_path / "t.json"},
                     outputs=[tmp_path / "t.json"])
    check(result, {EXIT_USAGE}, name="regression")
    assert "w2 is <U1[2] but @main declares int8[24, 16, 1, 1]" in result.err
