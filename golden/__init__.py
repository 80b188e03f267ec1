"""The bit-exact NumPy golden model of the Focus unit (spec sections 2 to 4 and 6).

``golden`` and ``sim`` expose the same functions with the same signatures: ``golden`` computes in
NumPy, ``sim`` runs the RTL, so any input can be run through both and compared with ``==``.
"""

from .similarity import similar

__all__ = ["similar"]
