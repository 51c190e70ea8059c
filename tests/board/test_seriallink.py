"""The serial link's host side against a model of a board written from the protocol text
(isa/hostlink.py): chunking, byte order, partial words, and the errors of a silent or foreign
device."""

import numpy as np
import pytest

from driver.backends.base import BackendUnavailable, DeviceError
from driver.backends.seriallink import BoardNotAnswering, SerialLink, parse_link
from isa import hostlink as H
from isa import registers as R
from isa.config import load_config


class ModelPort:
    """A board on the far side of a serial port: LiteX bridge commands on a byte memory."""

    def __init__(self, dram_bytes=4096, magic=H.BOARD_MAGIC, config=None, silent=False):
        self.mem = np.zeros(dram_bytes, np.uint8)
        self.regs = {R.ID: R.CSR_ID}
        cfg = config or load_config("small")
        self.info = [magic, dram_bytes, 50_000_000, H.config_word(cfg.key, cfg.bus_width),
                     H.STATUS_MEM_READY]
        self.silent = silent
        self.inbuf, self.outbuf = bytearray(), bytearray()
        self.commands = []

    def _word(self, waddr):
        byte = 4 * waddr
        if byte >= H.INFO_BASE:
            i = (byte - H.INFO_BASE) // 4
            return self.info[i] if i < len(self.info) else 0
        if byte >= H.CSR_BASE:
            return self.regs.get(byte - H.CSR_BASE, 0)
        return int.from_bytes(self.mem[byte:byte + 4].tobytes(), "little")

    def _store(self, waddr, value):
        byte = 4 * waddr
        if byte >= H.CSR_BASE:
            self.regs[byte - H.CSR_BASE] = value
        else:
            self.mem[byte:byte + 4] = np.frombuffer(value.to_bytes(4, "little"), np.uint8)

    def write(self, data):
        self.inbuf += data
        while len(self.inbuf) >= 6:
            cmd, n = self.inbuf[0], self.inbuf[1]
            addr = int.from_bytes(self.inbuf[2:6], "big")
            need = 6 + (4 * n if cmd == H.CMD_WRITE else 0)
            if len(self.inbuf) < need:
                break
            self.commands.append((cmd, n, addr))
            for i in range(n):
                if cmd == H.CMD_WRITE:
                    self._store(addr + i, int.from_bytes(self.inbuf[6 + 4 * i:10 + 4 * i], "big"))
                elif not self.silent:
                    self.outbuf += self._word(addr + i).to_bytes(4, "big")
            del self.inbuf[:need]
        return len(data)

    def read(self, n):
        data = bytes(self.outbuf[:n])
        del self.outbuf[:n]
        return data

    def reset_input_buffer(self):
        self.outbuf.clear()


def test_memory_round_trip_in_chunks_with_partial_words():
    port = ModelPort(dram_bytes=8192)
    link = SerialLink(port, timeout=0.1)
    assert link.dram_bytes == 8192 and link.clock_hz == 50_000_000
    rng = np.random.default_rng(12)
    data = rng.integers(0, 256, 5000, dtype=np.uint8).tobytes()
    link.write_mem(0, data)
    assert port.mem[:5000].tobytes() == data                    # byte order: little-endian memory
    writes = [c for c in port.commands if c[0] == H.CMD_WRITE]
    assert max(n for _, n, _ in writes) == H.MAX_WORDS and len(writes) == -(-1250 // 255)
    link.write_mem(4097, b"\x01\x02\x03")                        # inside one word, odd offset
    expect = bytearray(data)
    expect[4097:4100] = b"\x01\x02\x03"
    assert port.mem[:5000].tobytes() == bytes(expect)
    assert link.read_mem(3, 4990) == bytes(expect[3:4993])
    with pytest.raises(ValueError, match="outside the board's DRAM"):
        link.read_mem(8190, 4)


def test_registers_at_the_csr_base():
    port = ModelPort()
    link = SerialLink(port, timeout=0.1)
    link.write_reg(R.INSN_COUNT, 0x1234_5678)
    assert port.regs[R.INSN_COUNT] == 0x1234_5678
    assert link.read_reg(R.ID) == R.CSR_ID
    assert port.commands[-1] == (H.CMD_READ, 1, (H.CSR_BASE + R.ID) // 4)


def test_the_sdram_ready_bit_is_read_from_the_board_description():
    port = ModelPort()
    link = SerialLink(port, timeout=0.1)
    port.info[H.INFO_STATUS] = 0                     # just out of reset
    assert not link.mem_ready()
    assert port.commands[-1] == (H.CMD_READ, 1, H.INFO_BASE // 4 + H.INFO_STATUS)
    port.info[H.INFO_STATUS] = H.STATUS_MEM_READY
    assert link.mem_ready()


def test_a_silent_device_is_named_with_its_port():
    with pytest.raises(BoardNotAnswering, match="no board answers on /dev/ttyX"):
        SerialLink(ModelPort(silent=True), name="/dev/ttyX", timeout=0.05)


def test_a_foreign_device_and_a_foreign_configuration():
    with pytest.raises(BoardNotAnswering, match="not a VTA board design"):
        SerialLink(ModelPort(magic=0x12345678), timeout=0.05)
    link = SerialLink(ModelPort(config=load_config("small")), timeout=0.05)
    link.check_config(load_config("ecp5-small"))                 # same ISA and bus: fine
    with pytest.raises(DeviceError, match="built for another one"):
        link.check_config(load_config("tiny"))


def test_link_strings_and_missing_ports():
    assert parse_link("/dev/ttyUSB0") == ("/dev/ttyUSB0", H.FT231X_MAX_BAUD)
    assert parse_link("COM3@115200") == ("COM3", 115200)
    with pytest.raises(BackendUnavailable, match="integer"):
        parse_link("/dev/ttyUSB0@fast")
    with pytest.raises(BackendUnavailable, match="cannot open serial port /dev/nonexistent-vta"):
        SerialLink.open("/dev/nonexistent-vta")
