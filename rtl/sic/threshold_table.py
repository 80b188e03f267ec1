"""The block matcher's per-layer threshold table: theta_q of each layer (spec 4.1, 4.2)."""

from amaranth.hdl import Module, unsigned
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock

__all__ = ["ThresholdTable", "threshold_read_signature"]


def threshold_read_signature(p):
    """The table's read port, from the reader's side: ``en`` with ``layer`` loads that layer's
    theta_q, which appears on ``theta_q`` the next cycle and holds until the next load."""
    return wiring.Signature({
        "en": Out(1),
        "layer": Out(p.layer_bits),
        "theta_q": In(p.theta_bits),
    })


class ThresholdTable(FocusBlock):
    """``layers`` entries of theta_q (``theta_bits`` wide), one write port and one read port.

    Latency 1: a load (``read.en``) at a clock edge puts entry ``read.layer`` on
    ``read.theta_q`` after that edge, where it holds until the next load, whatever is written to
    the table meanwhile. A load and a write of the same entry at the same edge give the old
    value. One write and one load per cycle; no back-pressure (neither port can stall). Entries
    start at 0; a reset does not clear them.

    Parameters
    ----------
    params : FocusParams
        Uses ``layers``, ``layer_bits`` and ``theta_bits``.

    Members
    -------
    w_en, w_addr, w_data : In
        Entry ``w_addr`` (a layer, < ``layers``) becomes ``w_data`` at the clock edge.
    read : In(threshold_read_signature(params))
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "w_en": In(1),
            "w_addr": In(p.layer_bits),
            "w_data": In(p.theta_bits),
            "read": In(threshold_read_signature(p)),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        m.submodules.mem = mem = memory.Memory(shape=unsigned(p.theta_bits), depth=p.layers,
                                               init=[])
        wp = mem.write_port()
        rp = mem.read_port()
        m.d.comb += [
            wp.en.eq(self.w_en),
            wp.addr.eq(self.w_addr),
            wp.data.eq(self.w_data),
            rp.en.eq(self.read.en),
            rp.addr.eq(self.read.layer),
            self.read.theta_q.eq(rp.data),
        ]
        return m
