"""The Focus unit's register file: the bus decoder, access rules and storage of the register map
:data:`rtl.top.registers.REGISTERS`, the commands, the sticky error flags and the threshold
table's write port."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..lib.register_bus import RegisterSignature
from .registers import ERROR_SHIFT, REGISTER, REGISTERS, RW, WO, ErrorFlag

__all__ = ["RegisterFile", "JobControlSignature", "ThetaWriteSignature", "register_layout",
           "settings_layout", "values_layout"]


def register_layout(reg):
    """The shape of register ``reg``'s implemented bits: ``unsigned(width)``, or a layout with
    one member per bit field (lower-case names) at the field's bit position."""
    if not reg.fields:
        return unsigned(reg.width)
    return data.FlexibleLayout(reg.width, {f.name.lower(): data.Field(unsigned(f.width), f.lsb)
                                           for f in reg.fields})


def settings_layout(job):
    """The RW registers of ``job`` (``"sec"`` or ``"sic"``: the RW registers named ``SEC_*`` or
    ``SIC_*``), as the struct a job sequencer reads, members named as the registers (lower
    case)."""
    prefix = job.upper() + "_"
    return data.StructLayout({r.name.lower(): register_layout(r) for r in REGISTERS
                              if r.access == RW and r.name.startswith(prefix)})


def values_layout():
    """The RO registers whose contents come from outside the register file (all but ``ID`` and
    ``STATUS``), members named as the registers (lower case)."""
    return data.StructLayout({r.name.lower(): register_layout(r) for r in REGISTERS
                              if r.access == "RO" and r.name not in ("ID", "STATUS")})


class JobControlSignature(wiring.Signature):
    """The register file's side of one job sequencer (a sequencer takes it as
    ``In(JobControlSignature(...))``).

    Members
    -------
    request : Out(1)
        The job's start bit is written to ``CTRL`` in this cycle, whether or not it is granted.
    start : Out(1)
        The job starts in this cycle (both jobs are idle, no ``ABORT``, the start is allowed).
    abort, clear : Out(1)
        ``CTRL.ABORT``, ``CTRL.CLEAR`` is written in this cycle.
    settings : Out(settings_layout)
        The job's settings registers.
    busy : In(1)
        The job runs.
    flags : In(len(ErrorFlag))
        :class:`ErrorFlag` bits the job raises in this cycle.
    """

    def __init__(self, settings):
        super().__init__({
            "request": Out(1),
            "start": Out(1),
            "abort": Out(1),
            "clear": Out(1),
            "settings": Out(settings),
            "busy": In(1),
            "flags": In(len(ErrorFlag)),
        })


class ThetaWriteSignature(wiring.Signature):
    """A write port of the block matcher's threshold table: ``data`` to entry ``addr`` in a cycle
    with ``we``."""

    def __init__(self, params):
        super().__init__({
            "we": Out(1),
            "addr": Out(params.layer_bits),
            "data": Out(params.theta_bits),
        })


class RegisterFile(FocusBlock):
    """The register map of :mod:`rtl.top.registers` on a :class:`RegisterSignature` bus.

    Everything about an address comes from :data:`REGISTERS`: whether it is mapped (registers
    marked ``sic`` only with ``sic=True``), its access, the stored width of an RW register, its
    read value (RW: the stored bits; WO: 0; ``ID``: its reset value; ``STATUS``: the job bits and
    the error flags; other RO registers: ``values``). A write to an RO or unmapped address is
    ignored and sets ``BUS``; a read of an unmapped address returns 0 and sets ``BUS``.
    ``THETA_DATA`` writes entry ``THETA_ADDR`` of the threshold table (``theta``) and increments
    ``THETA_ADDR``; an entry >= layers or a value >= 2**theta_bits is ignored and sets ``BUS``.

    Timing: writes take effect at the end of their cycle, reads have one cycle of latency (see
    :class:`RegisterSignature`). Commands (``sec``, ``sic``) are combinational from the bus: a
    start is granted in the cycle of its ``CTRL`` write when both jobs are idle, ``ABORT`` is not
    in the same write, only one start is, and (``START_SIC``) a valid code is stored and the unit
    has SIC; a start that is not granted sets ``COMMAND``, an ``ABORT`` while a job runs sets
    ``ABORTED``. The error flags are sticky, set at the end of the cycle a flag is raised, and
    cleared by ``CLEAR`` (flags raised in the cycle of a ``CLEAR`` stay set).

    Parameters
    ----------
    params : FocusParams
    sic : bool
        The unit has SIC (the SIC registers are mapped).

    Members
    -------
    bus : In(RegisterSignature())
    sec, sic : Out(JobControlSignature(settings_layout("sec" / "sic")))
    theta : Out(ThetaWriteSignature(params))
    values : In(values_layout())
        The RO registers' contents.
    code_valid : In(1)
        ``STATUS.CODE_VALID``; a SIC start needs it.
    busy : Out(1)
        A job runs.
    error : Out(1)
        An error flag is set.
    """

    def __init__(self, params=None, *, sic=True):
        self._sic = bool(sic)
        super().__init__(params, lambda p: {
            "bus": In(RegisterSignature()),
            "sec": Out(JobControlSignature(settings_layout("sec"))),
            "sic": Out(JobControlSignature(settings_layout("sic"))),
            "theta": Out(ThetaWriteSignature(p)),
            "values": In(values_layout()),
            "code_valid": In(1),
            "busy": Out(1),
            "error": Out(1),
        })

    @property
    def mapped(self):
        """The registers of this unit's map."""
        return tuple(r for r in REGISTERS if self._sic or not r.sic)

    def elaborate(self, platform):
        p = self._params
        m = Module()
        bus, sec, sic = self.bus, self.sec, self.sic
        mapped = self.mapped

        # ---- commands -------------------------------------------------------------------------
        ctrl = Signal(register_layout(REGISTER["CTRL"]))     # the bits of a CTRL write, else 0
        m.d.comb += ctrl.eq(Mux(bus.w_en & (bus.addr == REGISTER["CTRL"].addr),
                                bus.w_data, 0))
        both_idle = ~sec.busy & ~sic.busy
        start_sec = ctrl.start_sec & ~ctrl.start_sic & both_idle & ~ctrl.abort
        start_sic = (ctrl.start_sic & ~ctrl.start_sec & both_idle & self.code_valid & ~ctrl.abort
                     & int(self._sic))
        for job, request, start in ((sec, ctrl.start_sec, start_sec),
                                    (sic, ctrl.start_sic, start_sic)):
            m.d.comb += [job.request.eq(request), job.start.eq(start), job.abort.eq(ctrl.abort),
                         job.clear.eq(ctrl.clear)]
        bad_cmd = (ctrl.start_sec | ctrl.start_sic) & ~start_sec & ~start_sic

        # ---- writes ---------------------------------------------------------------------------
        stored = {r.name: Signal(register_layout(r), name=r.name.lower())
                  for r in mapped if r.access == RW}
        with m.If(bus.w_en):
            with m.Switch(bus.addr):
                for r in mapped:
                    if r.access == RW:
                        with m.Case(r.addr):
                            m.d.sync += stored[r.name].eq(bus.w_data[:r.width])
        writable = Cat(bus.addr == r.addr for r in mapped if r.writable).any()
        bad_write = bus.w_en & ~writable
        for job in (sec, sic):
            for name, _ in job.settings.shape():
                if name.upper() in stored:
                    m.d.comb += job.settings[name].eq(stored[name.upper()])

        theta_bad = Const(0)
        if self._sic:
            theta_write = bus.w_en & (bus.addr == REGISTER["THETA_DATA"].addr)
            theta_addr = stored["THETA_ADDR"]
            theta_ok = (theta_addr < p.layers) & (bus.w_data <= p.theta_max)
            theta_bad = theta_write & ~theta_ok
            m.d.comb += [
                self.theta.we.eq(theta_write & theta_ok),
                self.theta.addr.eq(theta_addr[:p.layer_bits]),
                self.theta.data.eq(bus.w_data[:p.theta_bits]),
            ]
            with m.If(theta_write):
                m.d.sync += theta_addr.eq(theta_addr + 1)

        # ---- reads ----------------------------------------------------------------------------
        errors = Signal(len(ErrorFlag))
        status = Signal(register_layout(REGISTER["STATUS"]))
        m.d.comb += [status.sec_busy.eq(sec.busy), status.sic_busy.eq(sic.busy),
                     status.code_valid.eq(self.code_valid)]
        for f in REGISTER["STATUS"].fields:
            if f.error:
                m.d.comb += status[f.name.lower()].eq(errors[f.lsb - ERROR_SHIFT])
        bad_read = Signal()
        m.d.sync += bus.r_data.eq(0)
        with m.If(bus.r_en):
            with m.Switch(bus.addr):
                for r in mapped:
                    with m.Case(r.addr):
                        if r.access == RW:
                            m.d.sync += bus.r_data.eq(stored[r.name])
                        elif r.access == WO:
                            pass                                # reads as 0
                        elif r.name == "ID":
                            m.d.sync += bus.r_data.eq(r.reset)
                        elif r.name == "STATUS":
                            m.d.sync += bus.r_data.eq(status)
                        else:
                            m.d.sync += bus.r_data.eq(self.values[r.name.lower()])
                with m.Default():
                    m.d.comb += bad_read.eq(1)

        # ---- sticky errors --------------------------------------------------------------------
        raised = (sec.flags | sic.flags
                  | Mux(bad_write | bad_read | theta_bad, ErrorFlag.BUS, 0)
                  | Mux(bad_cmd, ErrorFlag.COMMAND, 0)
                  | Mux(ctrl.abort & ~both_idle, ErrorFlag.ABORTED, 0))
        m.d.sync += errors.eq(Mux(ctrl.clear, 0, errors) | raised)
        m.d.comb += [self.busy.eq(sec.busy | sic.busy), self.error.eq(errors != 0)]
        return m
