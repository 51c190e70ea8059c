"""The generated conformance suite on the functional simulator, and the suite's own contract."""

from functools import lru_cache

import numpy as np
import pytest

from isa.config import load_config
from isa.errors import ErrorCode
from isa.image import load_image, save_image
from isa.conformance import ConformanceProgram, conformance_programs
from isa.conformance.analysis import token_balance
from sim.functional import SimulationError, find_race, run_image

CONFIGS = ("default", "small", "batch2", "tiny")


@lru_cache(maxsize=None)
def suite(config: str, seed: int = 0) -> tuple[ConformanceProgram, ...]:
    return tuple(conformance_programs(load_config(config), seed=seed))


def _cases():
    for config in CONFIGS:
        for index, prog in enumerate(suite(config)):
            yield pytest.param(config, index, id=f"{config}-{prog.name}")


@pytest.mark.parametrize("config,index", list(_cases()))
def test_program_on_functional_simulator(config, index):
    prog = suite(config)[index]
    if prog.is_bad:
        with pytest.raises(SimulationError) as info:
            run_image(prog.image)
        err = info.value
        assert (err.code, err.index) == (prog.expected_error, prog.expected_index), str(err)
        return
    result = run_image(prog.image)
    problems = prog.check_dram(result.dram) + prog.check_counters(result.counters)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("config", CONFIGS)
def test_check_run_helper(config):
    progs = suite(config)
    assert all(not p.check_run(run_image) for p in progs[::5])
    good = next(p for p in progs if not p.is_bad)

    def broken(image):
        result = run_image(image)
        for region in image.outputs:
            result.dram[region.addr] ^= 1
        return result
    assert good.check_run(broken)
    bad = next(p for p in progs if p.is_bad)
    assert bad.check_run(lambda image: type("R", (), {"dram": image.dram})())


@pytest.mark.parametrize("config", CONFIGS)
def test_suite_shape(config):
    progs = suite(config)
    names = [p.name for p in progs]
    assert len(set(names)) == len(names)
    assert len(progs) >= 80
    good = [p for p in progs if not p.is_bad]
    bad = [p for p in progs if p.is_bad]
    assert len(good) >= 80
    # every expected error kind is represented
    assert {p.expected_error for p in bad} == set(ErrorCode) - {ErrorCode.NONE}
    for p in progs:
        assert 1 <= p.image.insn_count <= 400, p.name
        assert p.image.config == load_config(config)
    for p in good:
        assert p.expected and set(p.expected) == {r.name for r in p.image.outputs}, p.name
        assert p.expected_counters is not None
        assert not any(token_balance(p.image).values()), (p.name, token_balance(p.image))
        for region in p.image.outputs:
            want = np.asarray(p.expected[region.name])
            assert want.size * np.dtype(region.dtype).itemsize == region.nbytes, p.name


def test_coverage_tags():
    tags = set()
    for p in suite("small"):
        tags.update(p.tags)
    for tag in ("padding", "inp", "wgt", "acc", "acc8", "uop", "stride", "narrowing", "noop",
                "edges", "reset", "signed", "wrap", "b2b", "loops", "blocked", "vt1", "vt2",
                "conv", "requant", "min", "max", "add", "shr", "mul", "imm", "vec",
                "double-buffer", "tokens", "bad"):
        assert tag in tags, tag


@pytest.mark.parametrize("config", ("small", "batch2"))
def test_good_programs_are_race_free(config):
    for p in suite(config):
        if not p.is_bad:
            find_race(p.image, schedules=4)


def test_deterministic_for_a_seed():
    a, b = conformance_programs("tiny", seed=3), conformance_programs("tiny", seed=3)
    assert [p.name for p in a] == [p.name for p in b]
    for x, y in zip(a, b):
        assert np.array_equal(x.image.dram, y.image.dram), x.name
        assert x.image.insn_addr == y.image.insn_addr
    c = conformance_programs("tiny", seed=4)
    assert any(not np.array_equal(x.image.dram, z.image.dram) for x, z in zip(a, c))


def test_other_seed_still_passes():
    for p in conformance_programs("small", seed=11):
        if p.is_bad:
            continue
        r = run_image(p.image)
        assert not p.check_dram(r.dram), p.name


def test_images_round_trip(tmp_path):
    for i, p in enumerate(suite("small") + suite("default")[::7]):
        path = tmp_path / f"{i}.npz"
        save_image(path, p.image)
        back = load_image(path)
        assert np.array_equal(back.dram, p.image.dram)
        assert (back.insn_addr, back.insn_count) == (p.image.insn_addr, p.image.insn_count)
        assert back.config == p.image.config
        assert back.outputs == p.image.outputs
        if not p.is_bad and i % 5 == 0:
            assert not p.check_dram(run_image(back).dram), p.name


def test_save_writes_image_and_expectation(tmp_path):
    progs = suite("tiny")
    good = next(p for p in progs if not p.is_bad)
    bad = next(p for p in progs if p.is_bad)
    good.save(tmp_path)
    bad.save(tmp_path)
    img = load_image(tmp_path / f"{good.name}.in.npz")
    with np.load(tmp_path / f"{good.name}.expect.npz") as exp:
        for name, want in good.expected.items():
            assert np.array_equal(exp[f"out_{name}"], want)
        assert int(exp["gemm_counter"]) == good.expected_counters["gemm_counter"]
    assert not good.check_dram(run_image(img).dram)
    with np.load(tmp_path / f"{bad.name}.expect.npz") as exp:
        assert int(exp["error_code"]) == int(bad.expected_error)
        assert int(exp["error_index"]) == bad.expected_index


def test_command_line_writes_directory(tmp_path):
    from isa.conformance.__main__ import main
    assert main(["--config", "tiny", "--out", str(tmp_path), "--family", "tokens",
                 "--random", "2"]) == 0
    names = sorted(p.name for p in tmp_path.glob("*.in.npz"))
    assert "random-0.in.npz" in names and "tokens-acc-double-buffer.in.npz" in names
    assert (tmp_path / "index.json").exists()
