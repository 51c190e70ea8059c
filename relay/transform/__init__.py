"""Passes: each is a function from ``IRModule`` to ``IRModule`` whose docstring says what it
guarantees."""
from .infer_type import infer_type
from .bind_params import bind_params
from .fold_constant import fold_constant
from .dead_code import dead_code_elimination
from .cse import eliminate_common_subexpr
from .simplify_inference import simplify_inference
from .fold_scale_axis import fold_scale_axis
from .normal_form import to_a_normal_form, to_graph_normal_form
from .fuse_ops import fuse_ops

__all__ = ["infer_type", "bind_params", "fold_constant", "dead_code_elimination", "eliminate_common_subexpr",
           "simplify_inference", "fold_scale_axis", "to_a_normal_form", "to_graph_normal_form", "fuse_ops",
           "sequential"]


def sequential(*passes):
    """One pass that runs ``passes`` in order."""
    def run(mod):
        for p in passes:
            mod = p(mod)
        return mod
    return run
