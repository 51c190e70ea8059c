"""Hand-written integer Relay programs through `vta compile` and `vta run`: exactly the Relay
interpreter's outputs on the functional and cycle backends (and the RTL for one), the report,
`vta inspect`, and the errors on bad binaries and inputs."""

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

import relay
from vta.cli import main

PROGRAMS = Path(__file__).parent / "programs"


def params_for(mod, seed=0):
    """Random int8 weights and int32 biases for every @main parameter but the first."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in mod["main"].params[1:]:
        t = p.type_annotation
        lo, hi = (-128, 128) if t.dtype == "int8" else (-3000, 3000)
        out[p.name_hint] = rng.integers(lo, hi, t.shape).astype(t.dtype)
    return out


def prepare(tmp_path, name, seed=0, config="default"):
    mod = relay.parse((PROGRAMS / name).read_text())
    params = params_for(mod, seed)
    np.savez(tmp_path / "params.npz", **params)
    x_t = mod["main"].params[0].type_annotation
    x = np.random.default_rng(seed + 1).integers(-128, 128, x_t.shape).astype("int8")
    np.save(tmp_path / "x.npy", x)
    binary = tmp_path / "model.vtab"
    assert main(["compile", str(PROGRAMS / name), "--params", str(tmp_path / "params.npz"),
                 "-o", str(binary), "--config", config]) == 0
    ref = relay.run(mod, x, *params.values())
    return mod, binary, x, ref, mod["main"].params[0].name_hint


@pytest.mark.parametrize("name,backend,config", [
    ("requant_chain.rly", "functional", "default"), ("requant_chain.rly", "cycle", "small"),
    ("resnet_like.rly", "functional", "small"), ("resnet_like.rly", "cycle", "default"),
    ("dcgan_like.rly", "functional", "default"), ("dcgan_like.rly", "cycle", "small"),
])
def test_compiled_program_matches_the_interpreter(tmp_path, capsys, name, backend, config):
    mod, binary, x, ref, xname = prepare(tmp_path, name, config=config)
    out, report = tmp_path / "out.npz", tmp_path / "report.json"
    assert main(["run", str(binary), "--input", f"{xname}={tmp_path / 'x.npy'}", "--out",
                 str(out), "--backend", backend, "--report", str(report)]) == 0
    got = np.load(out)["output_0"]
    assert got.dtype == ref.dtype
    np.testing.assert_array_equal(got, ref)
    r = json.loads(report.read_text())
    assert {"vta_mac_share", "segments"} <= set(r)
    assert all({"name", "target", "macs", "cycles"} <= set(s) for s in r["segments"])
    assert r["vta_mac_share"] == 1.0        # every conv2d and dense runs on VTA
    if backend == "cycle":
        vta = [s for s in r["segments"] if s["target"] == "vta"]
        assert r["cycles"] == sum(s["cycles"] for s in vta) > 0
    else:
        assert "cycles" not in r
    assert "on VTA" in capsys.readouterr().out


def test_rtl_backend_gives_the_same_outputs(tmp_path):
    pytest.importorskip("cocotb")
    from driver.backends import BackendUnavailable, get_backend
    try:
        get_backend("rtl")
    except BackendUnavailable as exc:
        pytest.skip(f"rtl backend unavailable: {exc}")
    mod, binary, x, ref, xname = prepare(tmp_path, "requant_chain.rly", config="small")
    out = tmp_path / "out.npz"
    assert main(["run", str(binary), "--input", f"x={tmp_path / 'x.npy'}", "--out", str(out),
                 "--backend", "rtl"]) == 0
    np.testing.assert_array_equal(np.load(out)["output_0"], ref)


def test_inspect_lists_every_segment(tmp_path, capsys):
    _, binary, *_ = prepare(tmp_path, "resnet_like.rly")
    capsys.readouterr()
    assert main(["inspect", str(binary)]) == 0
    text = capsys.readouterr().out
    assert "input  data: int8[2, 3, 12, 12]" in text
    assert "output output_0" in text and "int32[2, 10]" in text
    assert text.count(" vta  ") == 7          # 6 conv2d/dense and the max pool
    assert "vta  max_pool 3x3/3 on 32x3x3 -> int8" in text
    assert "relay nn.batch_flatten" in text


def test_bad_binaries_are_refused_before_running(tmp_path, capsys):
    _, binary, *_ = prepare(tmp_path, "requant_chain.rly")
    run = ["--input", f"x={tmp_path / 'x.npy'}", "--out", str(tmp_path / "o.npz")]
    # another configuration
    assert main(["run", str(binary), *run, "--config", "small"]) == 2
    assert "compiled for 1x16_i8w8a32_15_15_18_17 (default), not for" in capsys.readouterr().err
    # corrupted: one array altered, the manifest untouched
    with np.load(binary) as npz:
        arrays = {k: npz[k] for k in npz.files}
    key = next(k for k in arrays if k.endswith("/program"))
    arrays[key] = arrays[key].copy()
    arrays[key].flat[len(arrays[key]) // 2] ^= 1
    bad = tmp_path / "bad.vtab"
    with open(bad, "wb") as f:
        np.savez(f, **arrays)
    assert main(["run", str(bad), *run]) == 2
    assert f"corrupted: array '{key}' fails its checksum" in capsys.readouterr().err
    # another version
    manifest = json.loads(str(arrays["manifest"]))
    manifest["version"] = 99
    arrays["manifest"] = np.array(json.dumps(manifest))
    with open(bad, "wb") as f:
        np.savez(f, **arrays)
    assert main(["inspect", str(bad)]) == 2
    assert "version 99 VTA binary" in capsys.readouterr().err
    # truncated
    bad.write_bytes(binary.read_bytes()[:100])
    assert main(["inspect", str(bad)]) == 2
    assert "is not a VTA binary" in capsys.readouterr().err
    assert not (tmp_path / "o.npz").exists()


def test_bad_inputs_and_models(tmp_path, capsys):
    _, binary, *_ = prepare(tmp_path, "requant_chain.rly")
    np.save(tmp_path / "f.npy", np.zeros((1, 3, 8, 8), np.float32))
    assert main(["run", str(binary), "--input", f"x={tmp_path / 'f.npy'}", "--out",
                 str(tmp_path / "o.npz")]) == 2
    assert "input x is float32[1, 3, 8, 8] but the model expects int8[1, 3, 8, 8]" in \
        capsys.readouterr().err
    assert main(["run", str(binary), "--out", str(tmp_path / "o.npz")]) == 2
    assert "missing --input for x" in capsys.readouterr().err
    np.savez(tmp_path / "p2.npz", nope=np.zeros(3, np.int8))
    assert main(["compile", str(PROGRAMS / "requant_chain.rly"), "--params",
                 str(tmp_path / "p2.npz"), "-o", str(tmp_path / "m.vtab")]) == 2
    assert "@main has no parameter(s) nope" in capsys.readouterr().err
    assert not (tmp_path / "m.vtab").exists()
    (tmp_path / "bad.rly").write_text('#[version = "0.0.5"]\ndef @main(%x: int8) { %x +')
    assert main(["compile", str(tmp_path / "bad.rly"), "-o", str(tmp_path / "m.vtab")]) == 2
    assert not (tmp_path / "m.vtab").exists()


def test_tune_measures_caches_and_compiles_with_the_winners(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "tune.json"
    monkeypatch.setenv("VTA_TUNE_CACHE", str(cache))
    mod = relay.parse((PROGRAMS / "requant_chain.rly").read_text())
    np.savez(tmp_path / "p.npz", **params_for(mod))
    assert main(["tune", str(PROGRAMS / "requant_chain.rly"), "--params",
                 str(tmp_path / "p.npz"), "--config", "small", "--top", "2"]) == 0
    entries = json.loads(cache.read_text())
    assert len(entries) == 2 and all(e["cycles"] > 0 for e in entries.values())
    # a second compile uses the cache (nothing measured again) and keeps the winners
    assert main(["compile", str(PROGRAMS / "requant_chain.rly"), "--params",
                 str(tmp_path / "p.npz"), "--config", "small", "--tune", "-o",
                 str(tmp_path / "m.vtab")]) == 0
    assert json.loads(cache.read_text()) == entries
    from compiler.binary import load_binary
    model = load_binary(tmp_path / "m.vtab")
    winners = {json.dumps(e["schedule"], sort_keys=True) for e in entries.values()}
    assert {json.dumps(s.schedule.to_json(), sort_keys=True) for s in model.segments
            if s.target == "vta"} == winners
