import pytest

from driver import BackendUnavailable, Device
from driver.backends.simlink import SimulatedLink

CONFIGS = ("default", "small", "batch2")


def backend_options(name: str) -> dict:
    if name == "board":
        return {"link": SimulatedLink(dram_bytes=4 << 20, steps_per_poll=4096)}
    return {}


def available_backends() -> list[str]:
    names = ["functional", "board", "cycle"]
    try:
        from driver.backends.rtl import RtlBackend
        RtlBackend.check_available()
        names.append("rtl")
    except (ImportError, BackendUnavailable):
        pass
    return names


@pytest.fixture
def make_device():
    def make(config: str, backend: str = "functional", **kw) -> Device:
        return Device(config, backend, dram_bytes=4 << 20, **backend_options(backend), **kw)
    return make
