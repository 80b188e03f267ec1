"""Amaranth RTL of the Focus unit. One block per module; :mod:`rtl.params` holds the parameters."""

from .params import FocusParams

__all__ = ["FocusParams"]
