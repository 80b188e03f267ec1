"""The ``focus-rtl`` command line: the one layer that may import every other (rtl, sim, boards)."""

from importlib import metadata

try:
    __version__ = metadata.version("focus-rtl")
except metadata.PackageNotFoundError:      # run from a checkout that was never installed
    __version__ = "0+unknown"
