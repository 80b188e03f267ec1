"""The common base of the Focus unit's blocks: a Component built for one :class:`FocusParams`."""

from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .params import FocusParams

__all__ = ["FocusBlock", "resolve_params", "stage_members", "job_status_members"]


def resolve_params(params):
    """``params``, or the default :class:`FocusParams` when it is None."""
    return FocusParams() if params is None else params


def stage_members(i_layout, o_layout, **members):
    """The members of a stream stage: ``i_stream`` (``In``, a stream of ``i_layout``) and
    ``o_stream`` (``Out``, a stream of ``o_layout``), then ``members`` in the order given (the
    order of the emitted ports)."""
    return {"i_stream": In(stream.Signature(i_layout)),
            "o_stream": Out(stream.Signature(o_layout)), **members}


def job_status_members(cause):
    """The status members of a block that takes jobs: ``busy`` (a job is under way), ``error``
    (the job was rejected) and ``cause`` (``Out(cause)``, an ``enum.Enum`` with a shape: why,
    ``NONE`` otherwise), in that order. ``error`` and ``cause`` hold until the next job's
    configuration beat is accepted."""
    return {"busy": Out(1), "error": Out(1), "cause": Out(cause)}


class FocusBlock(wiring.Component):
    """A block of the Focus unit: a Component built for one :class:`FocusParams`.

    A block's ``__init__`` stores its own settings, then calls
    ``super().__init__(params, lambda p: {...members...})``.

    Parameters
    ----------
    params : FocusParams or None
        None means the default ``FocusParams()``.
    members : callable, dict or wiring.Signature
        The block's signature, or a callable that returns it for the resolved parameters (so
        the members never see ``None``).
    """

    def __init__(self, params, members):
        self._params = params = resolve_params(params)
        super().__init__(members(params) if callable(members) else members, src_loc_at=1)

    @property
    def params(self):
        """The :class:`FocusParams` the block was built for."""
        return self._params
