"""The ``focus-rtl`` command line: the one layer that may import every other (rtl, sim, boards)."""
