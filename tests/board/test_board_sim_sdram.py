"""The whole SDRAM board design in simulation — core, LiteDRAM (GENSDRPHY + controller) with the
behavioural SDRAM chip on its pins, UART bridge — driven over its simulated serial line by the
driver's own host code (``BoardBackend`` over ``SerialLink``, what a real board runs with).

Conformance images and the compiled digits CNN (``vta run MODEL.vtab --backend board --link
board-sim``) give the functional simulator's results, and the chip model saw no broken SDRAM
rule. The default run takes two vectors, a rejected program and one digit; VTA_BOARD_SIM_ALL=1
runs every small conformance vector and five digits.
"""

import os

import numpy as np
import pytest

from isa.conformance import conformance_programs
from isa.errors import ErrorCode
from isa.image import load_image
from sim.functional import run_image

from ..hw.conftest import VECTORS, require_verilator

DEFAULT = ("small-pub-conv3x3-pad1-relu", "small-pub-alu-imm-extremes")
EVERYTHING = bool(os.environ.get("VTA_BOARD_SIM_ALL"))


def _require():
    require_verilator()
    pytest.importorskip("litedram")


def test_conformance_images_on_the_sdram_board():
    _require()
    from hw.board.simserial import BOARD_SIM_BYTES, run_on_board_sim

    names = (sorted(p.name.replace(".in.npz", "") for p in VECTORS.glob("small-*.in.npz"))
             if EVERYTHING else list(DEFAULT))
    images = [load_image(VECTORS / f"{n}.in.npz") for n in names]
    bad = next(p for p in conformance_programs("small") if p.name == "bad-dram-store-just-past")
    results = run_on_board_sim([*images, bad.image], mem_bytes=BOARD_SIM_BYTES, memory="sdram")
    # the host started right after reset: the backend waited for the SDRAM's ready bit
    assert int(results[0]["ready_polls"]) > 1
    assert all(int(r["ready_polls"]) == 1 for r in results[1:])
    for name, image, r in zip(names, images, results):
        assert "error" not in r, f"{name}: {r.get('error')}"
        assert int(r["sdram_violation"]) == 0, name
        reference = run_image(image)
        assert np.array_equal(r["dram"], reference.dram), name
        assert np.array_equal(r["dram"], np.load(VECTORS / f"{name}.expect.npz")["dram"]), name
        assert int(r["gemm_uops"]) == reference.counters["gemm_counter"], name
        assert int(r["alu_uops"]) == reference.counters["alu_counter"], name
        assert int(r["cycles"]) > 0 and int(r["mem_busy"]) > 0, name
    error = results[-1]
    assert int(error["sdram_violation"]) == 0
    assert (int(error["code"]), int(error["index"])) == (ErrorCode.DRAM_RANGE,
                                                         bad.expected_index)
    assert "DRAM_RANGE" in str(error["error"]) and "Store(" in str(error["error"])


def test_compiled_digits_cnn_runs_on_the_sdram_board(tmp_path, capsys):
    """`vta run digits.vtab --backend board --link board-sim`: every VTA launch of the model
    goes through the simulated board; outputs equal the functional simulator's and the Relay
    interpreter's run of the int8 program."""
    _require()
    pytest.importorskip("onnx")
    pytest.importorskip("sklearn")
    from compiler.binary import save_binary
    from compiler.compile import compile_module
    from compiler.runtime import execute
    from isa.config import load_config
    from relay.frontend import load_onnx
    from relay.interpreter import Interpreter
    from relay.quantize import quantize
    from vta.cli import main
    from vta.demo_model import _example

    ex = _example()
    mod, params = load_onnx(ex.MODEL)
    q = quantize(mod, params, ex.calibration_set())
    model = compile_module(q.mod, None, load_config("small"))
    binary = tmp_path / "digits.vtab"
    save_binary(binary, model)
    name = model.inputs[0].name
    _, (x_test, _) = ex.digits_split()
    for i in range(5 if EVERYTHING else 1):
        x = x_test[i:i + 1]
        np.save(tmp_path / "x.npy", x)
        out = tmp_path / f"out{i}.npz"
        assert main(["run", str(binary), "--input", f"{name}={tmp_path / 'x.npy'}", "--out",
                     str(out), "--backend", "board", "--link", "board-sim"]) == 0
        got = np.load(out)["output_0"]
        functional, _, _ = execute(model, {name: x}, "functional")
        np.testing.assert_array_equal(got, functional[0])
        np.testing.assert_array_equal(got, Interpreter(q.mod).run_main(x))
    assert "cycles" in capsys.readouterr().out


def test_vta_run_model_takes_the_board_backend_and_its_link(tmp_path, capsys):
    """`vta run MODEL.vtab --backend board --link sim` (the software board, no RTL) gives the
    interpreter's outputs; --link without the board backend is bad usage; the board backend
    without a link says what to give."""
    from vta.cli import main

    from ..compiler.test_cli import prepare

    _, binary, x, ref, xname = prepare(tmp_path, "requant_chain.rly", config="small")
    run = ["run", str(binary), "--input", f"{xname}={tmp_path / 'x.npy'}", "--out",
           str(tmp_path / "out.npz")]
    assert main([*run, "--backend", "board", "--link", "sim"]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["output_0"], ref)
    capsys.readouterr()
    assert main([*run, "--link", "sim"]) == 2
    assert "--link applies to the board backend only" in capsys.readouterr().err
    assert main([*run, "--backend", "board"]) != 0
    assert "board-sim" in capsys.readouterr().err
