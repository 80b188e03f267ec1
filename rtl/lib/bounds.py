"""Compares of an unsigned value with a constant bound, folded when the value's width decides them.

A counter or field sized from the parameters can be too narrow to pass a bound that is also
sized from them: a 1-bit count at ``tokens = 1`` is never above ``lanes``, a ``count_bits``-wide
M is never above ``tokens = 2**k - 1``. The compare is then a constant, which Verilator's lint
rejects (CMPCONST, in its default set, so the emitted file would not lint and a Verilator build
would stop). These helpers build the compare only where its result depends on the value, and
the constant otherwise; the logic is the same after Yosys's constant folding.
"""

from amaranth.hdl import Const, Value

__all__ = ["above", "at_most", "outside_1_to"]


def above(value, bound):
    """``value > bound`` for an unsigned ``value`` and an integer ``bound``: ``Const(0)`` when no
    value of its width exceeds ``bound``, ``Const(1)`` when every one does (``bound < 0``)."""
    value = Value.cast(value)
    if value.shape().signed:
        raise TypeError(f"above() takes an unsigned value, not {value.shape()!r}")
    if bound >= 2 ** len(value) - 1:
        return Const(0)
    if bound < 0:
        return Const(1)
    return value > bound


def at_most(value, bound):
    """``value <= bound``, the complement of :func:`above`, folded the same way."""
    result = above(value, bound)
    return Const(1 - result.value) if isinstance(result, Const) else value <= bound


def outside_1_to(value, high):
    """Whether ``value`` is outside 1 .. ``high``: 0, or :func:`above` ``high`` (a job's token
    count against the unit's ``tokens``)."""
    return (value == 0) | above(value, high)
