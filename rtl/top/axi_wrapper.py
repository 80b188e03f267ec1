"""The Focus unit behind standard buses (spec 5.6): AXI4-Lite control, AXI4-Stream data, one
clock ``aclk``, active-low ``aresetn``, an interrupt line; flat, conventional Verilog port names.

``FocusUnitAXI`` adds no state to the data path: every AXI4-Stream port is the
:class:`~rtl.top.focus_unit.FocusUnit` stream port of the same name, its payload split into
``tdata`` (every field but ``last``, at the payload's own bit offsets, padded with zero bits to a
whole number of bytes) and ``tlast`` (the payload's ``last``; a payload without ``last``, such as
``scores``, gives a port without ``tlast``). The control port is
:class:`rtl.lib.axi_lite.AXI4LiteToRegisters` in front of the unit's register bus.
"""

from amaranth.hdl import ClockDomain, Module, Shape
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..lib.axi_lite import AXI4LiteSignature, AXI4LiteToRegisters
from ..lib.clock_gate import ICG_CELL
from .focus_unit import FocusUnit, focus_unit_members

__all__ = ["FocusUnitAXI", "AXI_CTRL", "axis_prefix", "axis_tdata_layout", "axis_ports",
           "PAD_FIELD"]

#: The prefix of the AXI4-Lite control port's signals.
AXI_CTRL = "s_axi_ctrl"
#: The name of the zero padding at the top of a ``tdata`` layout (absent when none is needed).
PAD_FIELD = "reserved"


def axis_prefix(port, flow):
    """``s_axis_<port>`` for a stream the unit takes (``flow`` is ``In``), ``m_axis_<port>``
    for one it drives."""
    return f"{'s' if flow == In else 'm'}_axis_{port}"


def axis_tdata_layout(payload):
    """The ``tdata`` layout of a stream with payload layout ``payload``: the payload's fields
    but ``last``, at the same offsets, then ``reserved`` zero bits up to a whole number of
    bytes. Raises ``ValueError`` unless ``last``, if present, is the payload's top bit (every
    payload of the unit is laid out so)."""
    fields = {name: field for name, field in payload}
    width = Shape.cast(payload).width
    if "last" in fields:
        if fields["last"].offset != width - 1 or Shape.cast(fields["last"].shape).width != 1:
            raise ValueError("a payload's `last` must be its top bit")
        width -= 1
    members = {name: field.shape for name, field in payload if name != "last"}
    pad = -width % 8
    if pad:
        members[PAD_FIELD] = pad
    return data.StructLayout(members)


def axis_ports(params):
    """The unit's stream ports as AXI4-Stream ports: ``{port: (prefix, flow, payload layout,
    tdata layout, has tlast)}`` in the unit's member order (``flow``: ``In`` when the unit takes
    the stream)."""
    ports = {}
    for name, member in focus_unit_members(params).items():
        if not (member.is_signature and isinstance(member.signature, stream.Signature)):
            continue
        payload = member.signature.members["payload"].shape
        has_last = "last" in dict(iter(payload))
        ports[name] = (axis_prefix(name, member.flow), member.flow, payload,
                       axis_tdata_layout(payload), has_last)
    return ports


def _members(p):
    members = {"aclk": In(1), "aresetn": In(1)}
    # The AXI4LiteSignature is the manager's view: the target's ports are its flipped members.
    for name, member in AXI4LiteSignature().members.items():
        members[f"{AXI_CTRL}_{name}"] = member.flip()
    for prefix, flow, _, tdata, has_last in axis_ports(p).values():
        # ``flow`` is the direction of the data (In: into the unit); ``tready`` goes the other way.
        back = Out if flow == In else In
        members[f"{prefix}_tdata"] = flow(tdata)
        if has_last:
            members[f"{prefix}_tlast"] = flow(1)
        members[f"{prefix}_tvalid"] = flow(1)
        members[f"{prefix}_tready"] = back(1)
    members["irq"] = Out(1)
    return members


class FocusUnitAXI(FocusBlock):
    """:class:`~rtl.top.focus_unit.FocusUnit` with an AXI4-Lite control port, an AXI4-Stream port
    per data stream, one clock and an interrupt: the drop-in IP (``focus-rtl emit --wrap axi``
    writes it as module ``focus_unit_axi``).

    Clock and reset: everything runs on the rising edge of ``aclk``. ``aresetn`` is active low
    and synchronous (sampled on ``aclk``, as AMBA asks): hold it low for at least 2 cycles; the
    unit is then idle, every ``tvalid``/``BVALID``/``RVALID`` low, the registers at their reset
    values.

    Control, ``s_axi_ctrl_*`` (AXI4-Lite, 32-bit data, 10-bit byte addresses: register ``n`` of
    :data:`rtl.top.registers.REGISTERS` at byte ``4 * n``): as
    :class:`~rtl.lib.axi_lite.AXI4LiteToRegisters`, built with the unit's readable and writable
    addresses. A read of an unmapped address and a write to a read-only or unmapped one answer
    ``SLVERR`` and have no effect (the unit's ``BUS`` flag is not set: the error goes back to the
    manager instead); so does a write whose ``WSTRB`` is not ``0xF``. Latency: ``BVALID`` 1 cycle
    after both write halves are held, ``RVALID`` 2 cycles after the ``AR`` handshake; one read and
    one write outstanding at a time.

    Data: ``s_axis_scores``, ``s_axis_tokens`` (the unit takes them) and ``m_axis_mask``,
    ``m_axis_code``, ``m_axis_sic`` (the unit drives them), each with ``tdata``, ``tvalid``,
    ``tready`` and, where the payload has ``last``, ``tlast``. ``tdata`` is the payload without
    ``last`` (:func:`axis_tdata_layout`; the datasheet's ``ports.json`` and ``focus_pkg.sv`` give
    each field's offset, width and sign); the ``reserved`` bits of an output are 0 and those of an
    input are ignored. ``scores`` has no ``tlast``: an SEC job's length is ``SEC_M`` and
    ``SEC_R``. A frame (``tlast`` to ``tlast``) on ``m_axis_mask`` and ``m_axis_code`` is one SEC
    job's output, on ``s_axis_tokens`` one SIC job's column of kept tokens, on ``m_axis_sic`` one
    SIC job's output. The stream ports are the unit's, wire for wire: the same latency,
    throughput and back-pressure (:class:`~rtl.top.focus_unit.FocusUnit`), and AXI4-Stream's
    handshake rules are the unit's stream rules.

    ``irq``: active high, level, from registers: high while ``IRQ_STATUS & IRQ_ENABLE`` is not 0
    (a job ended, an error flag was raised); clear it by writing 1s to ``IRQ_STATUS``.

    Parameters
    ----------
    params : FocusParams
    icg_cell, sic
        As for :class:`~rtl.top.focus_unit.FocusUnit`.

    Members
    -------
    aclk, aresetn : In(1)
    s_axi_ctrl_<channel signal> : the AXI4-Lite target port (``awaddr`` ... ``rready``)
    s_axis_<port>_tdata, _tlast, _tvalid : In; _tready : Out
    m_axis_<port>_tdata, _tlast, _tvalid : Out; _tready : In
    irq : Out(1)
    """

    def __init__(self, params=None, *, icg_cell=ICG_CELL, sic=True):
        self._icg_cell = icg_cell
        self._sic = bool(sic)
        super().__init__(params, _members)

    def elaborate(self, platform):
        p = self._params
        m = Module()
        # The one clock domain: ``sync`` of every block inside, on aclk, reset by ~aresetn.
        m.domains.sync = sync = ClockDomain("sync")
        m.d.comb += [sync.clk.eq(self.aclk), sync.rst.eq(~self.aresetn)]

        m.submodules.unit = unit = FocusUnit(p, icg_cell=self._icg_cell, sic=self._sic)
        m.submodules.ctrl = bridge = AXI4LiteToRegisters(unit.readable, unit.writable)
        wiring.connect(m, bridge.bus, unit.bus)
        # Flat port names are what integrators expect (``s_axi_ctrl_awaddr``), so the AXI
        # channel signals are joined one by one, in the direction of the signature.
        for name, member in AXI4LiteSignature().members.items():
            port, inner = getattr(self, f"{AXI_CTRL}_{name}"), getattr(bridge.axi, name)
            m.d.comb += inner.eq(port) if member.flow == Out else port.eq(inner)

        for name, (prefix, flow, payload, _, has_last) in axis_ports(p).items():
            inner = getattr(unit, name)
            tdata = getattr(self, f"{prefix}_tdata")
            valid, ready = getattr(self, f"{prefix}_tvalid"), getattr(self, f"{prefix}_tready")
            fields = [field for field, _ in payload if field != "last"]
            if flow == In:
                m.d.comb += [inner.valid.eq(valid), ready.eq(inner.ready)]
                m.d.comb += [inner.payload[f].eq(tdata[f]) for f in fields]
                if has_last:
                    m.d.comb += inner.payload.last.eq(getattr(self, f"{prefix}_tlast"))
            else:
                m.d.comb += [valid.eq(inner.valid), inner.ready.eq(ready)]
                m.d.comb += [tdata[f].eq(inner.payload[f]) for f in fields]
                if has_last:
                    m.d.comb += getattr(self, f"{prefix}_tlast").eq(inner.payload.last)
        m.d.comb += self.irq.eq(unit.irq)
        return m
