import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from driver.cli import (EXIT_OK, EXIT_PROGRAM_ERROR, EXIT_UNAVAILABLE, EXIT_USAGE, main,
                        register)
from isa.config import load_config
from isa.encoding import Finish, Gemm, Load, MemType, Store, encode_program
from isa.image import ProgramImage, save_image

VECTORS = Path(__file__).resolve().parents[1] / "data" / "conformance"
ROOT = Path(__file__).resolve().parents[2]


def image_of(insns, config="small", dram_bytes=1 << 16) -> ProgramImage:
    cfg = load_config(config)
    program = encode_program(insns, cfg)
    dram = np.zeros(dram_bytes, np.uint8)
    dram[4096:4096 + len(program)] = np.frombuffer(program, np.uint8)
    return ProgramImage(dram, 4096, len(insns), cfg)


@pytest.fixture
def conformance_case():
    case = sorted(VECTORS.glob("small-*.in.npz"))[0]
    return case, Path(str(case).replace(".in.npz", ".expect.npz"))


@pytest.mark.parametrize("backend", ["functional", "board"])
def test_run_conformance_image(tmp_path, capsys, conformance_case, backend):
    image, expect = conformance_case
    out = tmp_path / "result.npz"
    argv = ["run", str(image), "--backend", backend, "--out", str(out)]
    if backend == "board":
        argv += ["--link", "sim"]
    assert main(argv) == EXIT_OK
    result, expected = np.load(out), np.load(expect)
    assert np.array_equal(result["dram"], expected["dram"])
    if backend == "functional":
        for name in ("gemm_counter", "alu_counter", "inp_load_nbytes", "out_store_nbytes"):
            assert int(result[name]) == int(expected[name])
        assert "cycles" not in result.files
    assert "instructions" in capsys.readouterr().out


def test_missing_and_bad_images(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.npz")]) == EXIT_USAGE
    assert "no such image file" in capsys.readouterr().err
    bad = tmp_path / "bad.npz"
    bad.write_text("not an image")
    assert main(["run", str(bad)]) == EXIT_USAGE
    assert "not a NumPy .npz program image" in capsys.readouterr().err
    np.savez(tmp_path / "partial.npz", dram=np.zeros(16, np.uint8))
    assert main(["run", str(tmp_path / "partial.npz")]) == EXIT_USAGE
    assert "lacks insn_addr, insn_count, config" in capsys.readouterr().err


@pytest.mark.parametrize("backend", ["functional", "board"])
def test_program_error_names_instruction_and_field(tmp_path, capsys, backend):
    path = tmp_path / "empty-loop.npz"
    save_image(path, image_of([Load(memory_type=MemType.UOP, x_size=0, y_size=0, x_stride=0),
                               Gemm(iter_out=0), Finish()]))
    argv = ["run", str(path), "--backend", backend] + (["--link", "sim"] if backend == "board"
                                                      else [])
    assert main(argv) == EXIT_PROGRAM_ERROR
    err = capsys.readouterr().err
    assert "instruction 1" in err and "EMPTY_LOOP" in err
    assert "iter_out" in err


def test_check_races(tmp_path, capsys):
    # A STORE that races with the ALU-free LOAD ACC: no tokens order them.
    cfg = load_config("small")
    racy = image_of([Load(memory_type=MemType.ACC, sram_base=0, dram_base=8192 // 64,
                          x_size=1, x_stride=1),
                     Store(sram_base=0, dram_base=16384 // 16, x_size=1, x_stride=1),
                     Finish()])
    racy.dram[8192:8192 + cfg.acc_elem_bytes] = 7
    path = tmp_path / "racy.npz"
    save_image(path, racy)
    assert main(["run", str(path)]) == EXIT_OK
    assert main(["run", str(path), "--check-races"]) == EXIT_PROGRAM_ERROR
    assert "racy" in capsys.readouterr().err
    assert main(["run", str(path), "--check-races", "--backend", "board"]) == EXIT_USAGE
    assert "functional backend only" in capsys.readouterr().err
    assert main(["run", str(path), "--schedule", "store-first", "--out",
                 str(tmp_path / "r.npz")]) == EXIT_OK
    assert not np.load(tmp_path / "r.npz")["dram"][16384:16400].any()  # store ran first


def test_board_without_link_is_unavailable(tmp_path, capsys):
    path = tmp_path / "finish.npz"
    save_image(path, image_of([Finish()]))
    assert main(["run", str(path), "--backend", "board"]) == EXIT_UNAVAILABLE
    assert "needs a link" in capsys.readouterr().err


def test_register_into_a_foreign_parser(tmp_path):
    parser = argparse.ArgumentParser(prog="vta")
    register(parser.add_subparsers(dest="command"))
    path = tmp_path / "finish.npz"
    save_image(path, image_of([Finish()]))
    args = parser.parse_args(["run", str(path), "--timeout", "5"])
    assert args.func(args) == EXIT_OK


def test_python_dash_m(tmp_path):
    path = tmp_path / "finish.npz"
    save_image(path, image_of([Finish()]))
    done = subprocess.run([sys.executable, "-m", "driver", "run", str(path), "--out",
                           str(tmp_path / "r.npz")], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert np.load(tmp_path / "r.npz")["dram"].size == 1 << 16
