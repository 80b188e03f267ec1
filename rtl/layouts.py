"""Payload layouts shared between blocks (a block's private layouts live in its own file).

Testbenches pack and unpack with these same layouts (``layout.const({...}).as_bits()``,
``data.Const(layout, bits)``), never with hand-written shifts and masks.
"""

from amaranth.hdl import unsigned
from amaranth.lib import data

__all__ = ["score_beat_layout", "mask_beat_layout", "offset_word_layout"]


def score_beat_layout(p):
    """``lanes`` unsigned scores; lane i of beat b is token (or row) b*lanes + i."""
    return data.StructLayout({
        "scores": data.ArrayLayout(unsigned(p.score_bits), p.lanes),
    })


def mask_beat_layout(p):
    """The keep mask in index order, ``lanes`` bits per beat: bit i of beat b is token b*lanes + i
    (LSB first). Padding bits past M are 0; ``last`` marks the job's final beat, ceil(M/lanes)-1."""
    return data.StructLayout({
        "keep": unsigned(p.lanes),
        "last": 1,
    })


def offset_word_layout(p):
    """One ``word_bits`` word of the offset code, MSB first (spec 3.3). ``last`` marks the job's
    final word; ``nbits`` (the string's length before padding) is valid on the last word."""
    return data.StructLayout({
        "word": unsigned(p.word_bits),
        "nbits": unsigned(p.nbits_bits),
        "last": 1,
    })
