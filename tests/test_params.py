# amaranth: UnusedElaboratable=no
"""FocusParams: defaults, presets, derived widths, and every rejection message."""

import re
from dataclasses import fields

import pytest

from rtl.params import FocusParams, ceil_log2

INT_FIELDS = {
    "tokens": (1, 65536), "lanes": (1, 64), "score_bits": (1, 32), "word_bits": (8, 64),
    "dim": (1, 256), "elem_bits": (2, 16), "theta_bits": (1, 16), "layers": (1, 256),
    "window": (4, 4096), "tile": (1, 65536), "comparators": (1, 7),
    "scatter_rows": (1, 64),
}
CHOICE_FIELDS = {"sorter": ("bubble", "radix"), "gating": ("enable", "icg"),
                 "representatives": ("first+mean", "first"),
                 "offset_schemes": ("all", "kept-exp-golomb")}


def test_defaults_match_spec_table():
    p = FocusParams()
    assert (p.tokens, p.lanes, p.score_bits, p.sorter, p.word_bits) == (1024, 4, 16, "bubble", 32)
    assert (p.dim, p.elem_bits, p.theta_bits, p.layers) == (32, 8, 8, 32)
    assert (p.window, p.tile, p.comparators, p.gating) == (256, 1024, 1, "enable")
    assert p.representatives == "first+mean" and p.mean_unit
    assert p.scatter_rows == 2


def test_every_field_is_validated():
    assert {f.name for f in fields(FocusParams)} == set(INT_FIELDS) | set(CHOICE_FIELDS)


@pytest.mark.parametrize("name", sorted(INT_FIELDS))
def test_int_field_bounds(name):
    low, high = INT_FIELDS[name]
    assert getattr(FocusParams(**{name: low}), name) == low
    assert getattr(FocusParams(**{name: high}), name) == high
    for bad in (low - 1, high + 1):
        msg = (rf"^FocusParams\.{name} = {bad} is out of range: it must be in "
               rf"\[{low}, {high}\]$")
        with pytest.raises(ValueError, match=msg):
            FocusParams(**{name: bad})


@pytest.mark.parametrize("name", sorted(INT_FIELDS))
@pytest.mark.parametrize("bad", ["4", 4.0, True, None])
def test_int_field_type(name, bad):
    with pytest.raises(TypeError, match=rf"^FocusParams\.{name} must be an integer, not "
                                        rf"{re.escape(repr(bad))}$"):
        FocusParams(**{name: bad})


@pytest.mark.parametrize("name", sorted(INT_FIELDS))
def test_int_fields_take_any_integral(name):
    """NumPy integers (any numbers.Integral but bool) are accepted and stored as plain int, so a
    FocusParams equals, tags and serializes like the one built from ints."""
    import json

    import numpy as np

    low, _ = INT_FIELDS[name]
    for value in (np.int64(low), np.uint16(low), np.int8(min(low, 127))):
        p = FocusParams(**{name: value})
        assert type(getattr(p, name)) is int
        assert p == FocusParams(**{name: int(value)}) and p.tag == FocusParams(**{name: low}).tag
        assert json.loads(json.dumps(p.to_dict()))[name] == low
    assert type(FocusParams().replace(**{name: np.int32(low)}).to_dict()[name]) is int
    with pytest.raises(TypeError, match=rf"^FocusParams\.{name} must be an integer, not "
                                        rf"np\.True_$"):
        FocusParams(**{name: np.True_})


@pytest.mark.parametrize("name", sorted(CHOICE_FIELDS))
def test_choice_fields(name):
    for ok in CHOICE_FIELDS[name]:
        assert getattr(FocusParams(**{name: ok}), name) == ok
    a, b = (re.escape(choice) for choice in CHOICE_FIELDS[name])
    with pytest.raises(ValueError, match=rf"^FocusParams\.{name} = 'nope' is not allowed: it "
                                         rf"must be '{a}' or '{b}'$"):
        FocusParams(**{name: "nope"})
    with pytest.raises(TypeError, match=rf"^FocusParams\.{name} must be a string, not 3$"):
        FocusParams(**{name: 3})


def test_frozen():
    p = FocusParams()
    with pytest.raises(AttributeError):
        p.tokens = 5


def test_presets():
    paper = FocusParams.paper()
    assert (paper.tokens, paper.lanes, paper.dim, paper.comparators) == (1024, 32, 32, 1)
    assert (paper.window, paper.tile) == (256, 1024)
    # The paper's provisioning: one comparator; only the first representative in the paper's.
    assert paper.representatives == "first" and not paper.mean_unit
    # ... and the paper's offset code only (the kept set in Exp-Golomb).
    assert paper.offset_schemes == "kept-exp-golomb" and FocusParams().offset_schemes == "all"
    assert FocusParams().comparators == 1 and FocusParams().mean_unit
    board = FocusParams.board()
    assert board.tokens <= 256 and board.comparators <= 2
    assert FocusParams.preset("default") == FocusParams()
    assert FocusParams.preset("paper") == paper
    with pytest.raises(ValueError, match=r"^Unknown preset 'huge': it must be one of "
                                         r"default, paper, board$"):
        FocusParams.preset("huge")


def test_overrides():
    p = FocusParams().with_overrides(["lanes=8", "sorter=radix", "tokens=0x100"])
    assert (p.lanes, p.sorter, p.tokens) == (8, "radix", 256)
    with pytest.raises(ValueError, match=r"^Unknown FocusParams field 'lane': fields are "):
        FocusParams().with_overrides(["lane=8"])
    with pytest.raises(ValueError, match=r"^FocusParams\.lanes = 'eight' is not an integer$"):
        FocusParams().with_overrides(["lanes=eight"])
    with pytest.raises(ValueError, match=r"^Override 'lanes' is not of the form field=value$"):
        FocusParams().with_overrides(["lanes"])
    with pytest.raises(ValueError, match=r"^FocusParams\.lanes = 0 is out of range"):
        FocusParams().with_overrides(["lanes=0"])


def test_representatives():
    """Both values, through the constructor, ``--set`` and the dict form; the tag tells them
    apart; ``mean_unit`` follows."""
    first = FocusParams(representatives="first")
    assert not first.mean_unit and FocusParams(representatives="first+mean").mean_unit
    assert FocusParams().with_overrides(["representatives=first"]) == first
    assert FocusParams.from_dict(first.to_dict()) == first
    assert first.tag != FocusParams().tag and "_f_r" in first.tag
    with pytest.raises(ValueError, match=r"^FocusParams\.representatives = 'mean' is not "
                                         r"allowed: it must be 'first\+mean' or 'first'$"):
        FocusParams(representatives="mean")
    # A dict from before the field existed still loads, with both representatives.
    old = FocusParams().to_dict()
    del old["representatives"]
    assert FocusParams.from_dict(old).mean_unit


def test_offset_schemes():
    """Both values, through the constructor, ``--set`` and the dict form; the tag tells them
    apart (the default's tag is unchanged); a bad value is a ValueError naming the field."""
    narrow = FocusParams(offset_schemes="kept-exp-golomb")
    assert FocusParams().offset_schemes == "all" and FocusParams.board().offset_schemes == "all"
    assert FocusParams().with_overrides(["offset_schemes=kept-exp-golomb"]) == narrow
    assert FocusParams.from_dict(narrow.to_dict()) == narrow
    assert narrow.tag == FocusParams().tag + "_keg"
    with pytest.raises(ValueError, match=r"^FocusParams\.offset_schemes = 'rice' is not "
                                         r"allowed: it must be 'all' or 'kept-exp-golomb'$"):
        FocusParams(offset_schemes="rice")
    with pytest.raises(TypeError, match=r"^FocusParams\.offset_schemes must be a string"):
        FocusParams(offset_schemes=0)
    # A dict from before the field existed still loads, with every scheme.
    old = FocusParams().to_dict()
    del old["offset_schemes"]
    assert FocusParams.from_dict(old).offset_schemes == "all"


def test_dict_round_trip():
    p = FocusParams.board()
    assert FocusParams.from_dict(p.to_dict()) == p


def test_tag_is_unique_per_field():
    base = FocusParams()
    tags = {base.tag}
    for name, (low, high) in INT_FIELDS.items():
        other = low if getattr(base, name) != low else high
        tags.add(base.replace(**{name: other}).tag)
    for name, (a, b) in CHOICE_FIELDS.items():
        tags.add(base.replace(**{name: b if getattr(base, name) == a else a}).tag)
    assert len(tags) == 1 + len(INT_FIELDS) + len(CHOICE_FIELDS)


@pytest.mark.parametrize("n,expect", [(0, 0), (1, 0), (2, 1), (3, 2), (4, 2), (5, 3), (1024, 10),
                                      (1025, 11)])
def test_ceil_log2(n, expect):
    assert ceil_log2(n) == expect


@pytest.mark.parametrize("dim,elem_bits", [(1, 2), (5, 8), (32, 8), (256, 16)])
def test_similarity_widths_are_exact(dim, elem_bits):
    """The widths hold the extreme values, checked with Python integers."""
    p = FocusParams(dim=dim, elem_bits=elem_bits)
    most_negative = -(1 << (elem_bits - 1))
    largest_norm = dim * most_negative * most_negative
    assert largest_norm < (1 << p.norm_bits)
    assert largest_norm < (1 << (p.dot_bits - 1))          # signed dot holds +largest
    most_positive = (1 << (elem_bits - 1)) - 1
    assert -dim * most_negative * most_positive >= -(1 << (p.dot_bits - 1))
    assert largest_norm ** 2 * (1 << (2 * p.theta_bits)) < (1 << p.lhs_bits)
    assert p.theta_max ** 2 * largest_norm ** 2 < (1 << p.rhs_bits)
    # dot**2 of a positive dot (at most the largest norm), exactly as wide as it must be; the
    # token's threshold factor theta_q**2 * nx.
    assert largest_norm ** 2 < (1 << p.dot_sq_bits) <= 2 * largest_norm ** 2
    assert largest_norm < (1 << p.norm_bits)
    assert p.theta_max ** 2 * largest_norm < (1 << p.token_threshold_bits)


@pytest.mark.parametrize("tokens,index_bits,count_bits", [(1, 1, 1), (2, 1, 2), (1024, 10, 11),
                                                          (12736, 14, 14)])
def test_token_widths(tokens, index_bits, count_bits):
    p = FocusParams(tokens=tokens)
    assert (p.index_bits, p.count_bits) == (index_bits, count_bits)


@pytest.mark.parametrize("tokens,word_bits", [(1, 8), (64, 32), (100, 16), (1024, 32)])
def test_code_words_is_the_longest_code(tokens, word_bits):
    """Every token kept at order 7 (8 bits each) is the longest offset code: exactly code_words."""
    import numpy as np

    from golden.offsets import encode_offsets
    p = FocusParams(tokens=tokens, word_bits=word_bits)
    assert len(encode_offsets(np.ones(tokens, bool), order=7, word_bits=word_bits)[0]) == \
        p.code_words
    rng = np.random.default_rng(tokens)
    for e in range(8):
        mask = rng.random(tokens) < rng.random()
        assert len(encode_offsets(mask, order=e, word_bits=word_bits)[0]) <= p.code_words


@pytest.mark.parametrize("tile,rows,index_bits,words", [(1, 1, 1, 1), (16, 2, 4, 8), (17, 2, 5, 9),
                                                         (1024, 2, 10, 512), (1024, 5, 10, 205),
                                                         (3, 64, 2, 1)])
def test_gemm_widths(tile, rows, index_bits, words):
    """A map entry holds every index 0 .. tile-1; the accumulation buffer holds tile rows in words
    of scatter_rows rows."""
    p = FocusParams(tile=tile, scatter_rows=rows)
    assert (p.gemm_index_bits, p.gemm_words, p.gemm_out_bits) == (index_bits, words, 32)
    assert tile - 1 < (1 << p.gemm_index_bits)
    assert p.gemm_words * rows >= tile > (p.gemm_words - 1) * rows
