"""The PyTorch-to-VTA commands of docs/models.md run as written (in a temporary directory) and
the scores they write are the float model's, within int8 quantisation."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "models.md"


def test_pytorch_to_vta_block_runs(tmp_path):
    section = DOC.read_text().split("## From PyTorch to a run on VTA", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               PYTHONPATH=str(ROOT))
    done = subprocess.run(["bash", "-e", "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "100.0% on VTA" in done.stdout
    from relay.frontend import torch_models
    model = torch_models.resnet18(num_classes=10).eval()
    x = np.load(tmp_path / "build/r18/image.npy")
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    with np.load(tmp_path / "build/r18/scores.npz") as z:
        got = z["output_0"]
    assert got.shape == want.shape
    assert float(got.ravel() @ want.ravel() / np.linalg.norm(got) / np.linalg.norm(want)) > 0.99
