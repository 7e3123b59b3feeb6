"""min / max for the step and communication models, whose layout degrees may be scalars or numpy
arrays (the planner evaluates every layout of a search in one call). Builtin ``min``/``max`` on an
array raise (ambiguous truth value); numpy's would force arrays on scalar callers."""

from __future__ import annotations


def minimum(a, b):
    """min(a, b) for scalars; elementwise when either is a numpy array."""
    try:
        return min(a, b)
    except (ValueError, TypeError):  # numpy array: truth value ambiguous
        return a - (a - b) * (a > b)


def maximum(a, b):
    """max(a, b) for scalars; elementwise when either is a numpy array."""
    try:
        return max(a, b)
    except (ValueError, TypeError):  # numpy array: truth value ambiguous
        return a + (b - a) * (b > a)


def scalar_or_array(value):
    """``value`` as a plain Python number where it is a 0-d numpy array (what numpy hands a scalar
    caller back), unchanged otherwise (a numpy array of layouts, or already a number)."""
    return value.item() if getattr(value, "ndim", None) == 0 else value
