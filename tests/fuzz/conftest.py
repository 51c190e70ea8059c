"""Fuzz statistics: ``VTA_FUZZ_STATS=FILE`` appends the inputs tried per command and outcome."""

from .harness import write_stats


def pytest_sessionfinish(session, exitstatus):
    write_stats()
