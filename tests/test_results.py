"""The spec 6 results are named tuples, the same class from golden and sim, that still unpack
and index like the tuples they were, with fields named as the spec's table."""

import numpy as np
import pytest

import golden
import sim
from golden.results import (
    FocusResult,
    LayerResult,
    MatchResult,
    OffsetCode,
    SecResult,
    SicResult,
)

RNG = np.random.default_rng(3)
SCORES = RNG.integers(0, 1000, (2, 12))
TOKENS = np.repeat(RNG.integers(-50, 50, (4, 8)), 3, axis=0)
WEIGHTS = RNG.integers(-3, 4, (8, 2))
SIC_ARGS = dict(frame_stride=4, row_stride=2, theta_q=golden.theta_q(0.9), tile=16, window=16)

CALLS = [
    ("sec", lambda m: m.sec(SCORES, 5), SecResult, ("mask", "words", "nbits")),
    ("encode_offsets", lambda m: m.encode_offsets(np.arange(12) % 3 == 0), OffsetCode,
     ("words", "nbits")),
    ("block_match", lambda m: m.block_match(TOKENS[:, :4], np.arange(12), **SIC_ARGS),
     MatchResult, ("map", "uniques")),
    ("sic", lambda m: m.sic(TOKENS, np.arange(12), dim=4, **SIC_ARGS), SicResult,
     ("maps", "uniques")),
    ("focus", lambda m: m.focus(SCORES, TOKENS, 6, dim=4, **SIC_ARGS), FocusResult,
     ("mask", "words", "nbits", "maps", "uniques")),
    ("focus_layer", lambda m: m.focus_layer(SCORES, TOKENS, WEIGHTS, 6, dim=4, **SIC_ARGS),
     LayerResult, ("mask", "y")),
]


def _same(a, b):
    if isinstance(a, list):
        assert len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
        return True
    np.testing.assert_array_equal(a, b)
    return True


@pytest.mark.parametrize("name, call, cls, fields", CALLS, ids=[c[0] for c in CALLS])
def test_named_results(name, call, cls, fields):
    want, got = call(golden), call(sim)
    assert type(want) is cls and type(got) is cls, name
    assert cls._fields == fields
    assert isinstance(got, tuple) and len(got) == len(fields)
    *head, tail = got                                   # still unpacks
    assert _same(tail, getattr(got, fields[-1])) and _same(head[0], got[0])
    for field in fields:
        assert _same(getattr(got, field), getattr(want, field)), (name, field)
