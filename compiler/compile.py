"""The pipeline: Relay module (+ parameters) -> :class:`~compiler.graph.CompiledModel`."""

from __future__ import annotations

from isa.config import VTAConfig, load_config
from relay.ir import IRModule

from .graph import CompiledModel, build_graph
from .partition import partition_for_vta, prepare

__all__ = ["compile_module"]


def compile_module(mod: IRModule, params: dict | None = None,
                   config: "VTAConfig | str" = "default",
                   schedules: dict | None = None, progress=None) -> CompiledModel:
    """Bind ``params``, partition, pack, schedule and lower every VTA operator of ``@main``.

    ``schedules`` maps workload keys (:func:`compiler.tuning.workload_key`) to tuned
    :class:`~compiler.schedule.Schedule` values; other operators get the cost model's choice.
    ``progress("compile", done, total)``, if given, is called after each VTA operator.
    """
    cfg = load_config(config)
    mod = partition_for_vta(prepare(mod, params), cfg)
    return build_graph(mod["main"], cfg, schedules, progress)
