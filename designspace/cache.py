"""Content-addressed results: one JSON file per (task, point, tool versions).

A result's key is the SHA-256 of its canonical JSON description (what was computed, on which
point, by which versions of the tools and of the project's sources that decide it); the file
``DIR/ab/abcdef….json`` holds the description and the result. Files are written through
``isa.safeio.atomic_output`` (a temporary name, renamed once complete), so a sweep killed at any
moment leaves complete results or none: the next run finds every finished task and runs only
the others.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from functools import lru_cache
from pathlib import Path

from isa.safeio import atomic_output

__all__ = ["Cache", "task_key", "source_digest"]

_REPO = Path(__file__).resolve().parent.parent


def task_key(description: dict) -> str:
    """The SHA-256 of ``description`` as canonical JSON."""
    text = json.dumps(description, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@lru_cache(maxsize=None)
def source_digest(*packages: str) -> str:
    """SHA-256 over the Python sources of ``packages`` (folders or files of this repository):
    a result computed by other code is another result."""
    h = hashlib.sha256()
    for name in packages:
        root = _REPO / name
        files = [root] if root.is_file() else sorted(root.rglob("*.py"))
        for path in files:
            h.update(str(path.relative_to(_REPO)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


class Cache:
    """Results under ``root`` by key; ``None`` root means no cache (everything recomputed)."""

    def __init__(self, root: "str | Path | None"):
        self.root = None if root is None else Path(root)
        if self.root is not None:
            self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, description: dict):
        """The stored result for ``description``, or None."""
        if self.root is None:
            return None
        path = self._path(task_key(description))
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            return None      # absent, or not ours: recompute
        if entry.get("description") != json.loads(json.dumps(description)):
            return None      # a hash collision would land here; recompute
        return entry.get("result")

    def put(self, description: dict, result) -> None:
        if self.root is None:
            return
        path = self._path(task_key(description))
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(path, what="sweep cache entry", mode="w") as fh:
            json.dump({"description": description, "result": result}, fh, indent=1,
                      sort_keys=True)

    def entries(self, kind: str) -> list[tuple[dict, object]]:
        """Every stored (description, result) whose description has ``kind``, oldest first."""
        if self.root is None:
            return []
        out = []
        for path in sorted(self.root.glob("*/*.json"), key=lambda p: (p.stat().st_mtime, p)):
            try:
                entry = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if entry.get("description", {}).get("kind") == kind:
                out.append((entry["description"], entry["result"]))
        return out

    def workdir(self, key: str) -> Path:
        """A folder for a task's artefacts (e.g. a netlist), beside the results."""
        path = (self.root if self.root is not None else Path(tempfile.gettempdir())) \
            / "work" / key[:16]
        path.mkdir(parents=True, exist_ok=True)
        return path
