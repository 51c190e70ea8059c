import json

import pytest

from isa.config import ConfigError, VTAConfig, load_config, named_configs


def test_default_is_the_original_default():
    cfg = load_config("default")
    assert cfg.key == "1x16_i8w8a32_15_15_18_17"
    assert (cfg.uop_depth, cfg.inp_depth, cfg.wgt_depth, cfg.acc_depth) == (8192, 2048, 1024, 2048)
    assert (cfg.inp_elem_bytes, cfg.wgt_elem_bytes, cfg.acc_elem_bytes, cfg.out_elem_bytes) == (
        16, 256, 64, 16)
    assert cfg.bus_width == 64 and cfg.macs_per_cycle == 256


def test_shipped_configs_load_and_round_trip():
    assert {"default", "small", "batch2", "tiny"} <= set(named_configs())
    for name in named_configs():
        cfg = load_config(name)
        again = VTAConfig.from_json(cfg.to_json())
        assert again == cfg


def test_original_json_keys_and_split_block():
    original = {"TARGET": "sim", "HW_VER": "0.0.2", "LOG_INP_WIDTH": 3, "LOG_WGT_WIDTH": 3,
                "LOG_ACC_WIDTH": 5, "LOG_BATCH": 0, "LOG_BLOCK": 4, "LOG_UOP_BUFF_SIZE": 15,
                "LOG_INP_BUFF_SIZE": 15, "LOG_WGT_BUFF_SIZE": 18, "LOG_ACC_BUFF_SIZE": 17}
    assert VTAConfig.from_dict(original) == load_config("default")
    split = dict(original)
    del split["LOG_BLOCK"]
    split.update(LOG_BLOCK_IN=4, LOG_BLOCK_OUT=3, LOG_ACC_BUFF_SIZE=16, LOG_WGT_BUFF_SIZE=17)
    cfg = VTAConfig.from_dict(split)
    assert (cfg.block_in, cfg.block_out, cfg.wgt_elem_bytes) == (16, 8, 128)
    assert (cfg.acc_depth, cfg.wgt_depth) == (2048, 1024)
    assert json.loads(cfg.to_json())["LOG_BLOCK_OUT"] == 3


@pytest.mark.parametrize("changes, message", [
    ({"log_inp_width": 4}, "LOG_INP_WIDTH = 4 is not supported: it must be 3"),
    ({"log_batch": -1}, "LOG_BATCH = -1 is out of range: it must be in [0, 6]"),
    ({"log_uop_buff_size": 20}, "uop_bgn needs 18 bits"),
    ({"log_inp_buff_size": 2}, "LOG_INP_BUFF_SIZE = 2 is too small"),
    ({"log_acc_buff_size": 24}, "sram_base (16 bits) cannot address more than 65536"),
    ({"log_acc_buff_size": 18, "log_inp_buff_size": 16},
     "gemm instruction field 'wgt_factor_in' ends at bit 138, past the 128-bit limit"),
    ({"max_burst_beats": 12}, "MAX_BURST_BEATS = 12 must be a power of two"),
    ({"log_batch": True}, "LOG_BATCH must be an integer"),
    ({"mem_outstanding": 0}, "MEM_OUTSTANDING = 0 is out of range: it must be in [1, 64]"),
    ({"mem_outstanding": 65}, "MEM_OUTSTANDING = 65 is out of range: it must be in [1, 64]"),
    ({"mem_beat_interval": 0}, "MEM_BEAT_INTERVAL = 0 is out of range: it must be in [1, 64]"),
    ({"mem_beat_interval": 2.0}, "MEM_BEAT_INTERVAL must be an integer"),
])
def test_invalid_configs_name_the_field_and_limit(changes, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        VTAConfig(**changes)


def test_uop_wider_than_32_bits_is_rejected():
    with pytest.raises(ConfigError, match="micro-op field 'wgt' ends at bit"):
        VTAConfig(log_acc_buff_size=17, log_inp_buff_size=10, log_wgt_buff_size=19)


def test_bad_json_and_unknown_keys():
    with pytest.raises(ConfigError, match="not valid JSON"):
        VTAConfig.from_json("{")
    with pytest.raises(ConfigError, match="unknown configuration key 'LOG_FOO'"):
        VTAConfig.from_dict({**load_config().to_dict(), "LOG_FOO": 1})
    with pytest.raises(ConfigError, match="missing LOG_BATCH"):
        VTAConfig.from_dict({k: v for k, v in load_config().to_dict().items()
                             if k != "LOG_BATCH"})
    with pytest.raises(ConfigError, match="no configuration named 'nope'"):
        load_config("nope")


def test_memory_system_keys_default_for_older_files_and_round_trip():
    """Configurations (and program images) written before MEM_OUTSTANDING and
    MEM_BEAT_INTERVAL existed get the defaults: the memory system with bursts in flight."""
    from isa.image import load_image
    from tests.conftest import reference_vectors
    path = reference_vectors()[0]
    import numpy as np
    text = str(np.load(path, allow_pickle=False)["config"])
    assert "MEM_OUTSTANDING" not in text and "MEM_BEAT_INTERVAL" not in text
    cfg = load_image(path).config
    assert (cfg.mem_outstanding, cfg.mem_beat_interval) == (8, 1)
    assert load_config("default").mem_outstanding == 8
    tuned = load_config("small").replace(mem_outstanding=3, mem_beat_interval=4)
    data = json.loads(tuned.to_json())
    assert (data["MEM_OUTSTANDING"], data["MEM_BEAT_INTERVAL"]) == (3, 4)
    assert VTAConfig.from_json(tuned.to_json()) == tuned
