"""The squared norm of a sub-vector, computed once when a token enters the SIC window (spec 4.1)."""

from amaranth.hdl import Module
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from .similarity_comparator import _tree_sum, vector_layout

__all__ = ["VectorNorm"]


class VectorNorm(FocusBlock):
    """Combinational ``norm = sum(x[i]**2)``, exact, for V signed ``elem_bits`` elements.

    No state and no latency: the block matcher registers the result together with the token (the
    norm is written into the window next to the vector, so each candidate's norm is read, never
    recomputed). V squarers and a balanced adder tree of depth ceil(log2 V).

    Parameters
    ----------
    params : FocusParams
        Uses ``dim`` and ``elem_bits``.

    Members
    -------
    x : In(vector_layout(params))
    norm : Out(params.norm_bits)
        Zero exactly when ``x`` is the zero vector (zero skip).
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "x": In(vector_layout(p)),
            "norm": Out(p.norm_bits),
        })

    def elaborate(self, platform):
        m = Module()
        x = self.x
        m.d.comb += self.norm.eq(_tree_sum(x[i] * x[i] for i in range(self._params.dim)))
        return m
