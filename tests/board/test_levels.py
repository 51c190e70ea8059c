"""bitstreams.levels: LUT4 levels between registers of a Yosys netlist, on hand-made netlists
whose depths are counted by hand."""

import json

import pytest

from bitstreams.levels import by_register, deepest_path, lut_levels, main


def _cell(kind, ins, outs):
    conns = {**{p: [b] for p, b in ins.items()}, **{p: [b] for p, b in outs.items()}}
    dirs = {**{p: "input" for p in ins}, **{p: "output" for p in outs}}
    return {"type": kind, "connections": conns, "port_directions": dirs}


def _netlist():
    """FF a → LUT l1 → LUT l2 → PFUMX m → FF b.DI; a → LUT l3 → b.CE; l1 → CCU2C c → LUT l4 →
    DP16KD d.ADA0 (wide multiplexers and carry cells add no level). Two modules, the second
    marked top."""
    cells = {
        "a": _cell("$paramod$1\\TRELLIS_FF", {"DI": 1}, {"Q": 2}),
        "l1": _cell("LUT4", {"A": 2}, {"Z": 3}),
        "l2": _cell("LUT4", {"A": 3, "B": 2}, {"Z": 4}),
        "m": _cell("PFUMX", {"ALUT": 4, "BLUT": 2}, {"Z": 5}),
        "u.cnt_TRELLIS_FF_Q_3": _cell("$paramod$1\\TRELLIS_FF", {"DI": 5, "CE": 6}, {"Q": 1}),
        "l3": _cell("LUT4", {"A": 2}, {"Z": 6}),
        "c": _cell("CCU2C", {"A0": 3}, {"S0": 7}),
        "l4": _cell("LUT4", {"A": 7}, {"Z": 8}),
        "d": _cell("DP16KD", {"ADA0": 8, "CLKA": "x"}, {}),
    }
    netnames = {"a_q": {"bits": [2]}, "sum": {"bits": [3, 7]}, "mux_in": {"bits": [4]},
                "hidden": {"bits": [4], "hide_name": 1}, "mux_out": {"bits": [5]}}
    return {"modules": {"other": {"cells": {}},
                        "top": {"attributes": {"top": "00000000000000000000000000000001"},
                                "cells": cells, "netnames": netnames}}}


def test_lut_levels_count_lut4_between_registers():
    got = lut_levels(_netlist(), worst=2)
    assert got["max"] == 2
    assert got["histogram"] == {1: 1, 2: 2}          # CE; DI and d.ADA0
    assert got["worst"] == [(2, "d.ADA0"), (2, "u.cnt_TRELLIS_FF_Q_3.DI")]


def test_deepest_path_walks_back_to_the_register():
    path = deepest_path(_netlist(), "u.cnt_TRELLIS_FF_Q_3.DI")
    assert path == [("PFUMX", "mux_out[0]"), ("LUT4", "mux_in[0]"), ("LUT4", "sum[0]"),
                    ("register", "a_q[0]")]
    with pytest.raises(ValueError, match="no input"):
        deepest_path(_netlist(), "nope.DI")


def test_by_register_groups_a_registers_bits():
    ends = [(3, "x.cnt_TRELLIS_FF_Q.DI"), (2, "x.cnt_TRELLIS_FF_Q_1.DI"),
            (3, "x.cnt_TRELLIS_FF_Q_2.CE"), (4, "y.flag_TRELLIS_FF_Q.DI"),
            (1, "z.low_TRELLIS_FF_Q.DI")]
    assert by_register(ends, min_levels=2) == [("y.flag", {4: 1}), ("x.cnt", {3: 2, 2: 1})]


def test_cli_prints_the_histogram_and_refuses_a_bad_file(tmp_path, capsys):
    good = tmp_path / "n.json"
    good.write_text(json.dumps(_netlist()))
    assert main([str(good), "--min", "2", "--paths", "1"]) == 0
    out = capsys.readouterr().out
    assert "at most 2; inputs per level 1: 1, 2: 2" in out
    assert "u.cnt" in out and "register" in out
    bad = tmp_path / "bad.json"
    bad.write_text('{"no": 1}')
    assert main([str(bad)]) == 2
    assert "not a usable Yosys JSON netlist" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.json")]) == 2
