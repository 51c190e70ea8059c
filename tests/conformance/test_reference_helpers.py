"""The numpy reference helpers against the statements of SPEC §4 and reference §3, and the
builder's layout and token helpers."""

import numpy as np

from isa.config import load_config
from isa.conformance import ProgramBuilder, acc_tiles, inp_tiles, tile, untile, wgt_tiles
from isa.conformance.tiles import alu_ref, bytes_of_acc, narrow, shr_ref, wrap32
from isa.encoding import Load, MemType, decode_program


def test_narrowing_is_truncation():
    assert narrow([300, 128, -129, 127, -128, 255, 256, 2**31 - 1, -2**31]).tolist() == \
        [44, -128, 127, 127, -128, -1, 0, -1, 0]


def test_shift_semantics():
    a = np.array([-5, 5, -(2**31), 2**31 - 1, 1])
    assert shr_ref(a, 40).tolist() == [-1, 0, -1, 0, 0]          # right >= 32: sign fill
    assert shr_ref(a, 32).tolist() == [-1, 0, -1, 0, 0]
    assert shr_ref(a, -32).tolist() == [0, 0, 0, 0, 0]           # left >= 32: 0
    assert shr_ref(a, -1).tolist() == [-10, 10, 0, -2, 2]        # negative = left, wraps
    assert shr_ref(a, 1).tolist() == [-3, 2, -(2**30), 2**30 - 1, 0]
    assert shr_ref(np.array([1]), -31).tolist() == [-(2**31)]


def test_alu_wraps():
    assert alu_ref("ADD", [2**31 - 1], [1]).tolist() == [-(2**31)]
    assert alu_ref("MUL", [65536], [-32768]).tolist() == [-(2**31)]
    assert alu_ref("MUL", [65536], [65536]).tolist() == [0]
    assert alu_ref("MIN", [-3, 4], [2, 4]).tolist() == [-3, 4]
    assert wrap32(2**32 + 5).tolist() == 5


def test_bytes_of_acc():
    planes = bytes_of_acc(np.array([0x12345678, -2]))
    assert planes.view(np.uint8).tolist() == [[0x78, 0xFE], [0x56, 0xFF], [0x34, 0xFF],
                                              [0x12, 0xFF]]


def test_tile_round_trip_and_layout():
    cfg = load_config("batch2")
    m = np.arange(4 * 16).reshape(4, 16).astype(np.int8)
    t = inp_tiles(cfg, m)
    assert t.shape == (2, 2, 2, 8)
    assert np.array_equal(t[1, 0], m[2:4, 0:8])
    assert np.array_equal(untile(t), m)
    assert wgt_tiles(cfg, np.zeros((16, 8))).shape == (2, 1, 8, 8)
    assert acc_tiles(cfg, np.zeros((2, 16))).dtype == np.int32
    assert np.array_equal(untile(tile(m, 2, 4)), m)


def test_builder_layout_and_tokens():
    cfg = load_config("small")
    b = ProgramBuilder(cfg, "t")
    w = b.put_wgt(np.ones((3, cfg.block_out, cfg.block_in), np.int8))
    a = b.put_acc(np.ones((2, cfg.batch, cfg.block_out), np.int32))
    assert w.addr % cfg.wgt_elem_bytes == 0 and a.addr % cfg.acc_elem_bytes == 0
    assert w.addr > 0
    b.load(MemType.WGT, 0, w, 3)
    b.sync("load", "compute")
    b.load(MemType.ACC, 0, a, 2)
    out = b.output("y", (2,))
    b.sync("compute", "store")
    b.store(0, out, 2)
    image = b.build()
    insns = decode_program(image.instruction_bytes, cfg)
    assert insns[0].push_next                  # push set on the WGT load itself
    assert insns[1].pop_prev and insns[1].push_next   # the ACC load pops l2g, pushes g2s
    assert insns[2].pop_prev                   # the STORE pops g2s
    # epilogue: store pushes s2g (on the STORE), load no-op pushes l2g, compute no-op pops both
    assert insns[2].push_prev
    assert isinstance(insns[3], Load) and insns[3].x_size == 0 and insns[3].push_next
    assert insns[4].pop_prev and insns[4].pop_next
    assert insns[-1].opcode.name == "FINISH"
    assert b.counters["wgt_load_nbytes"] == 3 * cfg.wgt_elem_bytes
    assert b.counters["out_store_nbytes"] == 2 * cfg.out_elem_bytes
