"""Where a sweep's tasks run: local processes (default) or a Dask cluster.

A runner takes a top-level function and argument tuples and yields ``(index, result, error)``
as tasks finish, in any order; the sweep caches each result the moment it arrives, so a sweep
stopped half-way keeps everything that finished.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
from typing import Callable, Iterator, Sequence

__all__ = ["Runner", "LocalRunner", "DaskRunner", "make_runner", "RunnerError"]


class RunnerError(RuntimeError):
    """A runner that cannot start (e.g. Dask missing or its scheduler unreachable)."""


class Runner:
    name = "runner"

    def run(self, fn: Callable, args: Sequence[tuple]) -> Iterator[tuple[int, object, object]]:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class LocalRunner(Runner):
    """``jobs`` worker processes on this machine; one job runs in this process."""

    name = "local"

    def __init__(self, jobs: "int | None" = None):
        self.jobs = max(1, jobs or os.cpu_count() or 1)

    def run(self, fn, args):
        if self.jobs == 1 or len(args) <= 1:
            for i, a in enumerate(args):
                try:
                    yield i, fn(*a), None
                except Exception as exc:  # noqa: BLE001 - reported per task by the sweep
                    yield i, None, exc
            return
        with cf.ProcessPoolExecutor(max_workers=min(self.jobs, len(args))) as pool:
            futures = {pool.submit(fn, *a): i for i, a in enumerate(args)}
            try:
                for fut in cf.as_completed(futures):
                    exc = fut.exception()
                    yield futures[fut], (None if exc else fut.result()), exc
            finally:
                for fut in futures:
                    fut.cancel()


class DaskRunner(Runner):
    """Tasks on a Dask cluster: the scheduler at ``address``, or a LocalCluster of ``jobs``
    single-threaded worker processes."""

    name = "dask"

    def __init__(self, address: "str | None" = None, jobs: "int | None" = None, *,
                 timeout: float = 30):
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise RunnerError("Dask is not installed: `pip install -e '.[sweep]'` brings "
                              "dask[distributed]") from None
        self.cluster = None
        try:
            if address:
                self.client = Client(address, timeout=timeout)
            else:
                self.cluster = LocalCluster(n_workers=max(1, jobs or os.cpu_count() or 1),
                                            threads_per_worker=1, processes=True,
                                            dashboard_address=None)
                self.client = Client(self.cluster, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            self.close()
            raise RunnerError(f"cannot reach the Dask scheduler {address or '(local)'}: "
                              f"{exc}") from None

    def run(self, fn, args):
        from dask.distributed import as_completed
        futures = [self.client.submit(fn, *a, pure=False) for a in args]
        index = {f.key: i for i, f in enumerate(futures)}
        try:
            for fut in as_completed(futures):
                exc = fut.exception()
                yield index[fut.key], (None if exc else fut.result()), exc
        finally:
            for fut in futures:
                fut.cancel()

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None


def make_runner(*, jobs: "int | None" = None, scheduler: "str | None" = None,
                dask: bool = False) -> Runner:
    """``scheduler`` (an address) or ``dask`` picks Dask; local processes otherwise."""
    if scheduler or dask:
        return DaskRunner(scheduler, jobs)
    return LocalRunner(jobs)
