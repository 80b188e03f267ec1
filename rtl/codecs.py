"""Stream beats to and from NumPy data, with no simulator (spec 3, 4.2, 5; style R4).

The drivers in :mod:`sim` (Amaranth simulator and cocotb) and the real-board driver
:mod:`boards.host` move the same beats, so they build and read them here. Beats are plain Python:
a ``dict`` for a ``data.StructLayout`` payload, a ``list`` for a ``data.ArrayLayout`` and an
``int`` otherwise, as the layouts of :mod:`rtl.layouts` and of the blocks describe them;
:func:`pack`, :func:`unpack`, :func:`to_bits` and :func:`from_bits` turn them into the layouts'
``data.Const`` values and raw port bits and back.

This module needs only NumPy and ``amaranth.lib.data``: never ``amaranth.sim``, :mod:`sim` or
cocotb.
"""

from collections.abc import Mapping, Sequence

import numpy as np
from amaranth.lib import data

__all__ = ["pack", "unpack", "to_bits", "from_bits", "score_beats", "vector_beats",
           "vector_from_beats", "mask_beats", "beats_to_mask", "mask_from_beats",
           "code_from_words", "token_beats", "decode_beats"]


# ---- payloads as layout values ------------------------------------------------------------------

def pack(shape, payload):
    """``payload`` as a value for a port of ``shape``: ``data.Const`` for a layout, else as is."""
    if isinstance(shape, data.Layout):
        if isinstance(payload, (data.Const, Mapping, Sequence)):
            return shape.const(payload)
        return data.Const(shape, int(payload))
    return payload


def unpack(value):
    """A payload value as plain Python: dict (struct), list (array) or int, recursively."""
    if isinstance(value, data.Const):
        layout = value.shape()
        if isinstance(layout, data.ArrayLayout):
            return [unpack(value[i]) for i in range(layout.length)]
        return {name: unpack(value[name]) for name, _ in layout}
    return value


def to_bits(shape, payload):
    """The raw bits (an int) of ``payload`` on a port of ``shape``."""
    value = pack(shape, payload)
    return value.as_bits() if isinstance(value, data.Const) else int(value)


def from_bits(shape, bits):
    """The payload whose raw bits are ``bits`` on a port of ``shape``, as plain Python."""
    if isinstance(shape, data.Layout):
        return unpack(data.Const(shape, bits))
    return int(bits)


# ---- SEC: scores, importance vectors, masks and the offset code ---------------------------------

def _pad(values, lanes):
    values = [int(v) for v in values]
    return {"scores": values + [0] * (lanes - len(values))}


def score_beats(scores, mode, lanes):
    """The score beats of an [R, M] score matrix in ``mode`` (spec 3.1), padded with 0: row by
    row (``"spatial"``) or column by column (``"temporal"``), ``lanes`` scores a beat."""
    scores = np.asarray(scores)
    R, M = scores.shape
    if mode == "spatial":
        return [_pad(scores[r, b:b + lanes], lanes) for r in range(R) for b in range(0, M, lanes)]
    return [_pad(scores[b:b + lanes, j], lanes) for j in range(M) for b in range(0, R, lanes)]


def vector_beats(s, lanes):
    """The ceil(M/lanes) beats of an importance vector, padded with 0."""
    return [_pad(s[b:b + lanes], lanes) for b in range(0, len(s), lanes)]


def vector_from_beats(beats, M):
    """The importance vector from score-layout beats; the padding lanes must be 0."""
    values = [v for beat in beats for v in beat["scores"]]
    if any(values[M:]):
        raise AssertionError(f"padding lanes past M = {M} are not 0: {values[M:]}")
    return np.array(values[:M], dtype=np.uint64)


def mask_beats(mask, lanes):
    """A bool mask as ``mask_beat_layout`` payloads: bit i of beat b is token b*lanes + i."""
    mask = np.asarray(mask, bool)
    count = -(-mask.size // lanes)
    padded = np.zeros(count * lanes, bool)
    padded[:mask.size] = mask
    weights = 1 << np.arange(lanes, dtype=object)
    return [{"keep": int((padded[b * lanes:(b + 1) * lanes] * weights).sum()),
             "last": int(b == count - 1)} for b in range(count)]


def beats_to_mask(beats, lanes):
    """The bool array of the ``keep`` bits of ``beats`` (``lanes`` per beat), padding included."""
    bits = [(beat["keep"] >> k) & 1 for beat in beats for k in range(lanes)]
    return np.array(bits, bool)


def mask_from_beats(beats, M, lanes):
    """The bool mask of M tokens from mask beats; checks ``last`` (only on the final beat) and that
    the padding bits are 0."""
    for n, beat in enumerate(beats):
        if beat["last"] != (n == len(beats) - 1):
            raise AssertionError(f"mask beat {n} of {len(beats)} has last = {beat['last']}")
    bits = beats_to_mask(beats, lanes)
    if bits[M:].any():
        raise AssertionError(f"mask padding bits past M = {M} are not 0: "
                             f"{bits[M:].astype(int).tolist()}")
    return bits[:M]


def code_from_words(words):
    """``(words uint64 array, nbits)`` from the ``offset_word_layout`` payloads of one job,
    checking the framing: ``last`` on the final word only, the same ``nbits`` on every word."""
    if not words or not words[-1]["last"] or any(w["last"] for w in words[:-1]):
        raise AssertionError(f"bad word framing: last flags {[w['last'] for w in words]}")
    nbits = {w["nbits"] for w in words}
    if len(nbits) != 1:
        raise AssertionError(f"nbits differs between the words of one job: {sorted(nbits)}")
    return np.array([w["word"] for w in words], np.uint64), nbits.pop()


# ---- SIC: tokens in, matcher beats out ----------------------------------------------------------

def token_beats(vectors, column, dim):
    """The token beats of one SIC job: column ``column`` (``dim`` elements) of each row of
    ``vectors``, ``last`` on the final one."""
    rows = np.asarray(vectors, dtype=np.int64)[:, column * dim:(column + 1) * dim]
    return [{"vector": row.tolist(), "last": int(i == len(rows) - 1)}
            for i, row in enumerate(rows)]


def decode_beats(beats, dim, mean):
    """(map int64 [S], uniques int64 [U, dim]) from one job's ``match_output_layout`` beats.

    Raises ``RuntimeError`` when the beats break the output format: unique indices out of order,
    a ``first`` unique beat whose index is not its own map entry, or a ``mean`` unique beat marked
    as a token.
    """
    mp, uniques = [], []
    for n, beat in enumerate(beats):
        if beat["token"]:
            mp.append(beat["map"])
        if beat["unique"]:
            if beat["map"] != len(uniques):
                raise RuntimeError(f"beat {n}: unique vector index {beat['map']}, expected "
                                   f"{len(uniques)} (indices must come in order)")
            if mean == bool(beat["token"]):
                raise RuntimeError(f"beat {n}: a unique vector {'with' if mean else 'without'} a "
                                   f"map entry is not allowed with representative "
                                   f"{'mean' if mean else 'first'}")
            uniques.append(beat["vector"])
    return (np.array(mp, dtype=np.int64),
            np.array(uniques, dtype=np.int64).reshape(len(uniques), dim))
