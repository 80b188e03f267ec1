"""The SEC offset code (spec 3.3): Exp-Golomb and Rice gaps of the kept or the dropped set, packing,
adaptive scheme, strict decoding.

The references here build the bit string as Python text, independently of the golden encoder's
vectorised packer.
"""

import time

import numpy as np
import pytest

from golden.offsets import (
    SCHEMES,
    Scheme,
    adaptive_order,
    adaptive_scheme,
    all_code_bits,
    code_bits,
    decode_offsets,
    encode_offsets,
    expgolomb_bits,
    gaps_from_mask,
    header_bits,
    rice_bits,
    rice_quotient_limit,
    scheme_bits,
)

# ---- independent references ----------------------------------------------------------------------


def ref_ue(code_num):
    """H.264 ue(v): bin(code_num + 1) preceded by (its length - 1) zeros."""
    b = bin(code_num + 1)[2:]
    return "0" * (len(b) - 1) + b


def ref_eg(g, e):
    """Order-e Exp-Golomb as ue(g >> e) followed by the e low bits of g (the k-th order form)."""
    low = format(g & ((1 << e) - 1), f"0{e}b") if e else ""
    return ref_ue(g >> e) + low


def ref_rice(g, e):
    """Rice with m = 2**e: g // m in unary (that many zeros, then a one), then g % m in e bits."""
    return "0" * (g >> e) + "1" + (format(g & ((1 << e) - 1), f"0{e}b") if e else "")


def ref_string(mask, e, coded=0, family=0):
    """The whole code string of a mask: e (3 bits), the set and the family (1 bit each), n
    (bit_length(M) bits), then the codes of the coded set's gaps; None when a Rice quotient is
    2 * bit_length(M) or more."""
    mask = list(map(bool, mask))
    M = len(mask)
    listed = [j for j, k in enumerate(mask) if k != bool(coded)]
    out = format(e, "03b") + str(coded) + str(family) + format(len(listed), f"0{M.bit_length()}b")
    prev = -1
    for j in listed:
        g = j - prev - 1
        if family and g >> e >= 2 * M.bit_length():
            return None
        out += ref_rice(g, e) if family else ref_eg(g, e)
        prev = j
    return out


def ref_adaptive(mask):
    """(scheme, string): the shortest of the 32 reference strings, the first in the order set,
    family, order among equals."""
    best = None
    for s in (0, 1):
        for f in (0, 1):
            for e in range(8):
                string = ref_string(mask, e, s, f)
                if string is not None and (best is None or len(string) < len(best[1])):
                    best = (Scheme(s, f, e), string)
    return best


def bits_of(words, nbits, word_bits):
    """The first nbits of the words, MSB first, as a '0'/'1' string."""
    return "".join(format(int(w), f"0{word_bits}b") for w in words)[:nbits]


def pack(string, word_bits, extra_words=0):
    """A '0'/'1' string packed MSB first into zero-padded words (Python ints)."""
    padded = string + "0" * (-len(string) % word_bits + extra_words * word_bits)
    return [int(padded[i:i + word_bits], 2) for i in range(0, len(padded), word_bits)]


def mask_from_gaps(gaps, tail=0):
    idx = np.cumsum(np.asarray(gaps) + 1) - 1
    mask = np.zeros(int(idx[-1]) + 1 + tail if len(gaps) else tail, dtype=bool)
    mask[idx] = True
    return mask


# ---- the code itself -----------------------------------------------------------------------------

H264_UE = ["1", "010", "011", "00100", "00101", "00110", "00111", "0001000", "0001001"]


def test_h264_ue_table():
    mask = mask_from_gaps(list(range(9)), tail=3)   # gaps are the codeNums 0..8
    M = mask.size                                  # 0+1+...+8 + 9 + 3 = 48 tokens
    words, nbits = encode_offsets(mask, order=0)
    string = bits_of(words, nbits, 32)
    head = "000" + "00" + format(9, f"0{M.bit_length()}b")
    assert string == head + "".join(H264_UE)
    assert nbits == len(head) + sum(map(len, H264_UE))
    assert [ref_ue(c) for c in range(9)] == H264_UE    # the test's own reference agrees


@pytest.mark.parametrize("e", [0, 1, 2, 3, 5, 7])
def test_order_e_codes_against_kth_order_form(e):
    for g in list(range(70)) + [127, 128, 255, 256, 1000, 4095, 12735]:
        mask = np.zeros(g + 1, dtype=bool)
        mask[g] = True                              # one kept token: a single gap g
        words, nbits = encode_offsets(mask, order=e)
        code = bits_of(words, nbits, 32)[header_bits(g + 1):]
        assert code == ref_eg(g, e), (g, e)
        assert expgolomb_bits(g, e) == len(code)


def test_order_e_examples():
    # v = g + 2**e, L = bit_length(v): L - 1 - e zeros then v in L bits.
    assert ref_eg(0, 2) == "100" and ref_eg(3, 2) == "111" and ref_eg(4, 2) == "01000"
    assert ref_eg(9, 1) == "001011"                        # v = 11 = 0b1011, 2 zeros
    assert expgolomb_bits(np.array([0, 3, 4, 9]), 2).tolist() == [3, 3, 5, 5]


def test_header_and_gaps():
    assert header_bits(1) == 6 and header_bits(1023) == 15 and header_bits(1024) == 16
    assert header_bits(12736) == 5 + 14
    assert gaps_from_mask([0, 1, 1, 0, 0, 1]).tolist() == [1, 0, 2]
    assert gaps_from_mask([1, 0, 0]).tolist() == [0]
    assert gaps_from_mask(np.zeros(5, dtype=bool)).tolist() == []


def test_encode_header_fields():
    mask = np.array([0, 0, 1, 0, 1, 0, 0, 0, 0, 0], dtype=bool)   # M = 10 -> count in 4 bits
    words, nbits = encode_offsets(mask, order=5, word_bits=8)
    assert bits_of(words, nbits, 8)[:9] == "101" + "00" + "0010"
    assert nbits == 9 + 6 + 6 and len(words) == 3 and words.dtype == np.uint64
    words, nbits = encode_offsets(mask, order=2, word_bits=8, coded="dropped", family="rice")
    assert bits_of(words, nbits, 8)[:9] == "010" + "11" + "1000"   # 8 dropped tokens


def test_empty_and_full_masks():
    for M in (1, 2, 31, 32, 33, 100):
        w, n = encode_offsets(np.zeros(M, dtype=bool))
        assert n == header_bits(M) and bits_of(w, n, 32) == "0" * n     # order 0 by tie
        w, n = encode_offsets(np.ones(M, dtype=bool), order=0)
        assert bits_of(w, n, 32) == "00000" + format(M, f"0{M.bit_length()}b") + "1" * M
        w, n = encode_offsets(np.ones(M, dtype=bool))    # adaptive: no dropped token to list
        assert n == header_bits(M) and bits_of(w, n, 32) == "00010" + "0" * M.bit_length()


# ---- round trips and exact strings ---------------------------------------------------------------

DENSITIES = [0.0, 0.001, 0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 1.0]


def test_round_trip_random_masks():
    rng = np.random.default_rng(20)
    cases = 0
    for M in [1, 2, 3, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100, 255, 256, 257]:
        for density in DENSITIES:
            for order in [None] + list(range(8)):
                word_bits = int(rng.choice([8, 11, 16, 32, 64]))
                mask = rng.random(M) < density
                words, nbits = encode_offsets(mask, order=order, word_bits=word_bits)
                expect = ref_adaptive(mask)[1] if order is None else ref_string(mask, order)
                assert nbits == len(expect) == code_bits(mask, order)
                assert len(words) == -(-nbits // word_bits)
                padded = "".join(format(int(w), f"0{word_bits}b") for w in words)
                assert padded == expect + "0" * (len(padded) - nbits)    # zero padding
                assert np.array_equal(decode_offsets(words, nbits, M, word_bits), mask)
                cases += 1
    assert cases == 16 * len(DENSITIES) * 9


def test_round_trip_many_random_sizes():
    rng = np.random.default_rng(21)
    for _ in range(2000):
        M = int(rng.integers(1, 400))
        mask = rng.random(M) < rng.random() ** 2
        order = None if rng.random() < 0.3 else int(rng.integers(0, 8))
        word_bits = int(rng.choice([8, 16, 32, 64]))
        words, nbits = encode_offsets(mask, order=order, word_bits=word_bits)
        assert np.array_equal(decode_offsets(words, nbits, M, word_bits), mask)


def test_every_word_width():
    rng = np.random.default_rng(22)
    mask = rng.random(300) < 0.2
    for word_bits in range(8, 65):
        words, nbits = encode_offsets(mask, order=2, word_bits=word_bits)
        assert bits_of(words, nbits, word_bits) == ref_string(mask, 2)
        assert int(words.max()) < 1 << word_bits
        assert np.array_equal(decode_offsets(words, nbits, 300, word_bits), mask)


def test_decoder_accepts_python_ints_and_extra_words():
    mask = np.array([1, 0, 1, 1, 0], dtype=bool)
    words, nbits = encode_offsets(mask, word_bits=64)
    as_ints = [int(w) for w in words] + [2**64 - 1]         # an extra word past nbits is ignored
    assert np.array_equal(decode_offsets(as_ints, nbits, 5, 64), mask)
    assert np.array_equal(decode_offsets(np.array(as_ints, dtype=object), nbits, 5, 64), mask)


def test_large_mask_is_fast():
    rng = np.random.default_rng(23)
    mask = rng.random(12736) < 0.3
    start = time.perf_counter()
    for order in (None, 0, 7):
        words, nbits = encode_offsets(mask, order=order)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"3 encodes of 12736 tokens took {elapsed:.2f} s"
    assert np.array_equal(decode_offsets(words, nbits, 12736), mask)
    full = np.ones(12736, dtype=bool)
    words, nbits = encode_offsets(full, order=0, word_bits=64)
    assert nbits == header_bits(12736) + 12736
    assert np.array_equal(decode_offsets(words, nbits, 12736, 64), full)


# ---- adaptive order ------------------------------------------------------------------------------


def test_adaptive_picks_min_and_ties_to_smaller_order():
    """The kept-set Exp-Golomb order alone (adaptive_order, all_code_bits), as before the set and
    the family were added."""
    rng = np.random.default_rng(24)
    ties = 0
    for _ in range(1500):
        M = int(rng.integers(1, 200))
        mask = rng.random(M) < rng.choice([0.0, 0.05, 0.2, 0.5, 0.9])
        lengths = [len(ref_string(mask, e)) for e in range(8)]
        best = min(lengths)
        expect = lengths.index(best)                    # first (smallest e) of the minima
        ties += lengths.count(best) > 1
        assert adaptive_order(mask) == expect
        assert all_code_bits(mask).tolist() == lengths
    assert ties > 50   # the tie rule was really exercised


def test_adaptive_scheme_picks_min_and_ties_to_lowest_index():
    rng = np.random.default_rng(26)
    ties = used = 0
    seen = set()
    for _ in range(600):
        M = int(rng.integers(1, 200))
        mask = rng.random(M) < rng.choice([0.0, 0.05, 0.2, 0.5, 0.8, 0.95, 1.0])
        scheme, expect = ref_adaptive(mask)
        lengths = [ref_string(mask, sc.order, sc.coded, sc.family) for sc in SCHEMES]
        ties += sum(x is not None and len(x) == len(expect) for x in lengths) > 1
        used += any(x is None for x in lengths)
        assert adaptive_scheme(mask) == scheme
        words, nbits = encode_offsets(mask)
        assert bits_of(words, nbits, 32) == expect
        assert scheme_bits(mask).reshape(-1).tolist() == [-1 if x is None else len(x)
                                                          for x in lengths]
        assert np.array_equal(decode_offsets(words, nbits, M), mask)
        seen.add(scheme[:2])
    assert ties > 50 and used > 50     # the tie rule and the Rice limit were exercised
    assert seen == {(0, 0), (0, 1), (1, 0), (1, 1)}   # every set and family was chosen


def test_every_scheme_round_trips_against_reference():
    rng = np.random.default_rng(27)
    for M in [1, 2, 5, 8, 9, 33, 100, 257]:
        for density in DENSITIES:
            mask = rng.random(M) < density
            for sc in SCHEMES:
                expect = ref_string(mask, sc.order, sc.coded, sc.family)
                kw = {"coded": ["kept", "dropped"][sc.coded],
                      "family": ["expgolomb", "rice"][sc.family]}
                if expect is None:
                    with pytest.raises(ValueError, match=r"the Rice code of order \d cannot code "
                                                         r"this mask: (kept|dropped) gap \d+"):
                        encode_offsets(mask, sc.order, 16, **kw)
                    with pytest.raises(ValueError, match=r"cannot code this mask"):
                        code_bits(mask, sc.order, **kw)
                    continue
                words, nbits = encode_offsets(mask, sc.order, 16, **kw)
                assert bits_of(words, nbits, 16) == expect
                assert code_bits(mask, sc.order, coded=sc.coded, family=sc.family) == nbits
                assert np.array_equal(decode_offsets(words, nbits, M, 16), mask)


def test_rice_codes_and_limit():
    assert [ref_rice(g, 2) for g in (0, 3, 4, 9)] == ["100", "111", "0100", "00101"]
    assert rice_bits(np.array([0, 3, 4, 9]), 2).tolist() == [3, 3, 4, 5]
    assert rice_bits(np.array([13, 14]), 0, limit=14).tolist() == [14, -1]
    assert rice_quotient_limit(1) == 2 and rice_quotient_limit(1024) == 22
    # M = 40: quotients must be below 12. One kept token at index 11 (gap 11): Rice order 0 is
    # "0"*11 + "1"; at index 12 it cannot be coded at order 0, but can at order 1 ("0"*6 + "10").
    for j, ok in ((11, True), (12, False)):
        mask = np.zeros(40, bool)
        mask[j] = True
        if ok:
            w, n = encode_offsets(mask, 0, family="rice")
            assert bits_of(w, n, 32)[header_bits(40):] == "0" * 11 + "1"
        else:
            with pytest.raises(ValueError, match=r"kept gap 0 \(12\) has a quotient 12 >= 12 "
                                                 r"= 2 \* bit_length\(M\)"):
                encode_offsets(mask, 0, family="rice")
            w, n = encode_offsets(mask, 1, family="rice")
            assert bits_of(w, n, 32)[header_bits(40):] == "0" * 6 + "10"


def test_scheme_arguments():
    mask = np.array([1, 0, 1], bool)
    with pytest.raises(ValueError, match=r"coded = 'dropped' and family = None need a fixed "
                                         r"order"):
        encode_offsets(mask, coded="dropped")
    with pytest.raises(ValueError, match=r"coded must be one of \['dropped', 'kept'\] \(or "
                                         r"0/1\), not 'both'"):
        encode_offsets(mask, 0, coded="both")
    with pytest.raises(ValueError, match=r"family must be one of \['expgolomb', 'rice'\]"):
        encode_offsets(mask, 0, family=2)
    assert np.array_equal(encode_offsets(mask, 3, coded=1, family=1)[0],
                          encode_offsets(mask, 3, coded="dropped", family="rice")[0])


def test_adaptive_tie_cases():
    assert adaptive_order(np.zeros(9, dtype=bool)) == 0        # every order costs 0 code bits
    # gap 1: e=0 "010" (3 bits), e=1 "11" (2 bits): e=1 wins.
    assert adaptive_order(mask_from_gaps([1])) == 1
    # gaps 2 and 0: e=0 "011"+"1" = 4 bits; e=1 "0100"+"10" = 6; e=0 wins.
    assert adaptive_order(mask_from_gaps([2, 0])) == 0
    # gap 1 twice: e=0 "010"+"010" = 6 bits, e=1 "11"+"11" = 4, e=2 "101"+"101" = 6.
    assert adaptive_order(mask_from_gaps([1, 1])) == 1
    # gaps [0, 1]: e=0 "1"+"010" = 4, e=1 "10"+"11" = 4: a tie, so e=0.
    assert adaptive_order(mask_from_gaps([0, 1])) == 0
    assert adaptive_order(np.array([0, 1])) == 0                # integer gaps work too
    # The scheme: an empty mask ties everywhere (header only): scheme 0. A full mask lists no
    # dropped token: dropped set, Exp-Golomb, order 0. Gap 1 alone, M = 2 ("01"): kept EG1 "11",
    # kept Rice 0 "01" and Rice 1 "11": 2 bits each; dropped: one dropped token at 0, "1": DG0.
    assert adaptive_scheme(np.zeros(9, dtype=bool)) == (0, 0, 0)
    assert adaptive_scheme(np.ones(9, dtype=bool)) == (1, 0, 0)
    assert adaptive_scheme(mask_from_gaps([1])) == (1, 0, 0)
    # "01010": kept EG1 "11"+"11" and kept Rice 0 "01"+"01" tie at 4 bits (EG1 has the lower
    # index); the dropped set (gaps 0, 1, 1) needs 5 bits at best (Rice 0).
    assert adaptive_scheme(mask_from_gaps([1, 1], tail=1)) == (0, 0, 1)


def test_kept_exp_golomb_schemes_restrict_the_adaptive_choice():
    """``schemes="kept-exp-golomb"``: the adaptive code is the shortest of the 8 kept-set
    Exp-Golomb reference strings (ties to the smaller order), also where one of the other 24
    schemes is shorter; fixed kept-set Exp-Golomb codes are unchanged; the other schemes raise
    ``ValueError`` naming the parameter; the code decodes with the ordinary decoder."""
    rng = np.random.default_rng(27)
    shorter_elsewhere = 0
    for _ in range(300):
        M = int(rng.integers(1, 150))
        mask = rng.random(M) < rng.choice([0.0, 0.1, 0.5, 0.9, 1.0])
        strings = [ref_string(mask, e) for e in range(8)]
        e = min(range(8), key=lambda k: (len(strings[k]), k))
        shorter_elsewhere += len(ref_adaptive(mask)[1]) < len(strings[e])
        assert adaptive_scheme(mask, schemes="kept-exp-golomb") == Scheme(0, 0, e)
        words, nbits = encode_offsets(mask, None, 16, schemes="kept-exp-golomb")
        assert bits_of(words, nbits, 16) == strings[e]
        assert code_bits(mask, None, schemes="kept-exp-golomb") == nbits
        assert np.array_equal(decode_offsets(words, nbits, M, 16), mask)
        fixed = encode_offsets(mask, 3, 16, schemes="kept-exp-golomb")
        assert bits_of(*fixed, 16) == strings[3]
    assert shorter_elsewhere > 50      # the restriction really changed the choice
    mask = np.ones(9, bool)
    for coded, family in (("dropped", None), (None, "rice"), (1, 1)):
        with pytest.raises(ValueError, match=r"is not available with schemes = "
                                             r"'kept-exp-golomb'"):
            encode_offsets(mask, 0, coded=coded, family=family, schemes="kept-exp-golomb")
        with pytest.raises(ValueError, match=r"is not available with schemes"):
            code_bits(mask, 0, coded=coded, family=family, schemes="kept-exp-golomb")
    for bad in ("none", None, 0):
        with pytest.raises(ValueError, match=r"^schemes must be 'all' or 'kept-exp-golomb', "):
            encode_offsets(mask, schemes=bad)
        with pytest.raises(ValueError, match=r"^schemes must be"):
            adaptive_scheme(mask, schemes=bad)


def test_code_bits_helpers():
    mask = mask_from_gaps([0, 1, 5, 20], tail=4)
    M = mask.size
    for e in range(8):
        assert code_bits(mask, e) == len(ref_string(mask, e))
        assert code_bits(gaps_from_mask(mask), e, tokens=M) == code_bits(mask, e)
    assert code_bits(mask, None) == min(code_bits(mask, e) for e in range(8))
    with pytest.raises(ValueError, match=r"code_bits of gaps needs tokens \(the job's M\)"):
        code_bits(np.array([0, 1]), 0)
    with pytest.raises(ValueError, match=r"the gaps need 30 tokens but tokens = 29"):
        code_bits(np.array([0, 1, 5, 20]), 0, tokens=29)
    with pytest.raises(ValueError, match=r"tokens = 5 does not match the mask length 4"):
        code_bits(np.ones(4, dtype=bool), 0, tokens=5)
    with pytest.raises(ValueError, match=r"gaps must be >= 0: found -1"):
        expgolomb_bits(np.array([3, -1]), 0)
    with pytest.raises(ValueError, match=r"order must be an integer in \[0, 7\], not None"):
        expgolomb_bits(3, None)


# ---- encoder argument errors ---------------------------------------------------------------------


@pytest.mark.parametrize("order", [-1, 8, 1.0, True, "2"])
def test_encode_rejects_bad_order(order):
    with pytest.raises(ValueError, match=r"order must be None \(adaptive\) or an integer in "
                                         r"\[0, 7\]"):
        encode_offsets(np.ones(4, dtype=bool), order=order)


@pytest.mark.parametrize("word_bits", [7, 65, 0])
def test_encode_rejects_bad_word_bits(word_bits):
    with pytest.raises(ValueError, match=rf"word_bits = {word_bits} is out of range: it must be "
                                         r"in \[8, 64\]"):
        encode_offsets(np.ones(4, dtype=bool), word_bits=word_bits)


def test_encode_rejects_bad_masks():
    with pytest.raises(ValueError, match=r"mask is empty: a job has M >= 1 tokens"):
        encode_offsets(np.zeros(0, dtype=bool))
    with pytest.raises(ValueError, match=r"mask must be 1-D \(one flag per token\), not shape "
                                         r"\(2, 2\)"):
        encode_offsets(np.ones((2, 2), dtype=bool))
    with pytest.raises(ValueError, match=r"mask must hold only 0 and 1 \(or be bool\): 1 other "
                                         r"value\(s\), first at index 2: 2"):
        encode_offsets([1, 0, 2])
    with pytest.raises(ValueError, match=r"mask must be a bool array, not dtype float64"):
        encode_offsets([1.0, 0.0])
    w1, n1 = encode_offsets([1, 0, 1])
    w2, n2 = encode_offsets(np.array([True, False, True]))
    assert n1 == n2 and np.array_equal(w1, w2)


# ---- malformed streams ---------------------------------------------------------------------------
# M = 10: the header is e (3 bits) + set and family (2 bits) + n (4 bits) = 9 bits.

M10 = 10


def _decode(string, nbits=None, tokens=M10, word_bits=32, extra_words=0):
    nbits = len(string) if nbits is None else nbits
    return decode_offsets(pack(string, word_bits, extra_words), nbits, tokens, word_bits)


def test_decode_valid_hand_stream():
    # e = 1, n = 2, gaps 0 ("10") and 3 (v = 5: "0101"): indices 0 and 4.
    assert np.flatnonzero(_decode("001" + "00" + "0010" + "10" + "0101")).tolist() == [0, 4]


def test_decode_truncated_stream():
    string = "000" + "00" + "0010" + "1" + "00100"       # e = 0, n = 2, gaps 0 and 3
    assert np.flatnonzero(_decode(string)).tolist() == [0, 4]
    with pytest.raises(ValueError, match=r"code 1 runs past nbits = 14: it starts at bit "
                                         r"position 10 and needs 5 bits"):
        _decode(string, nbits=len(string) - 1)
    with pytest.raises(ValueError, match=r"code 1 runs past nbits = 11: its prefix of zeros "
                                         r"starting at bit position 10 never ends"):
        _decode(string, nbits=11)
    with pytest.raises(ValueError, match=r"code 0 runs past nbits = 9"):
        _decode(string, nbits=9)          # the header says 2 codes, none follow


def test_decode_truncated_real_code():
    rng = np.random.default_rng(25)
    for _ in range(200):
        M = int(rng.integers(1, 100))
        mask = rng.random(M) < 0.5
        if not mask.any():
            continue
        words, nbits = encode_offsets(mask, order=int(rng.integers(0, 8)))
        cut = int(rng.integers(header_bits(M), nbits))
        with pytest.raises(ValueError, match=r"runs past nbits|trailing bits|index \d+ >= M"):
            decode_offsets(words, cut, M)


def test_decode_header_truncated():
    with pytest.raises(ValueError, match=r"header truncated: nbits = 8 but the header needs 9 "
                                         r"bits \(3 for the order, 2 for the set and the family, "
                                         r"4 for the count at M = 10\)"):
        _decode("000" + "00" + "000", nbits=8)
    with pytest.raises(ValueError, match=r"header truncated: nbits = 0"):
        decode_offsets([0], 0, 1)


def test_decode_trailing_bits():
    string = "000" + "00" + "0001" + "1"                 # n = 1, gap 0
    assert np.flatnonzero(_decode(string)).tolist() == [0]
    with pytest.raises(ValueError, match=r"trailing bits: the 1 code\(s\) end at bit position 10 "
                                         r"but nbits = 11"):
        _decode(string + "0")
    with pytest.raises(ValueError, match=r"trailing bits: the 0 code\(s\) end at bit position 9 "
                                         r"but nbits = 10"):
        _decode("000" + "00" + "0000" + "1")


def test_decode_index_out_of_range():
    with pytest.raises(ValueError, match=r"code 0 at bit position 9 gives index 10 >= M = 10"):
        _decode("000" + "00" + "0001" + ref_ue(10))
    assert np.flatnonzero(_decode("000" + "00" + "0001" + ref_ue(9))).tolist() == [9]
    # The second code overflows: indices 5, then 5 + 1 + 4 = 10.
    with pytest.raises(ValueError, match=r"code 1 at bit position 14 gives index 10 >= M = 10"):
        _decode("000" + "00" + "0010" + ref_ue(5) + ref_ue(4))


def test_decode_count_too_large():
    with pytest.raises(ValueError, match=r"count n = 11 > M = 10"):
        _decode("000" + "00" + "1011" + "1" * 11)
    assert _decode("000" + "00" + "1010" + "1" * 10).all()     # n = M is fine


def test_decode_too_many_leading_zeros():
    with pytest.raises(ValueError, match=r"code 0 has more than 31 leading zeros \(code starts "
                                         r"at bit position 9\)"):
        _decode("000" + "00" + "0001" + "0" * 32 + "1" + "0" * 32, word_bits=64)
    # 31 zeros pass the prefix check; the index 2**31 - 1 then fails the range check.
    with pytest.raises(ValueError, match=r"gives index 2147483647 >= M = 10"):
        _decode("000" + "00" + "0001" + "0" * 31 + "1" + "0" * 31, word_bits=16)
    # 32 zeros where the string ends: the zero limit is hit first.
    with pytest.raises(ValueError, match=r"more than 31 leading zeros"):
        _decode("000" + "00" + "0001" + "0" * 32)
    # 31 zeros where the string ends: the code runs past nbits.
    with pytest.raises(ValueError, match=r"code 0 runs past nbits = 40"):
        _decode("000" + "00" + "0001" + "0" * 31)


def test_decode_nbits_too_large_for_words():
    with pytest.raises(ValueError, match=r"nbits = 33 is larger than the 1 word\(s\) hold \(32 "
                                         r"bits at word_bits = 32\)"):
        decode_offsets([0], 33, 10)
    words, nbits = encode_offsets(np.ones(40, dtype=bool), order=0, word_bits=16)
    with pytest.raises(ValueError, match=r"is larger than the 2 word\(s\) hold \(32 bits"):
        decode_offsets(words[:2], nbits, 40, 16)


def test_decode_argument_errors():
    with pytest.raises(ValueError, match=r"words\[1\] = 256 does not fit in word_bits = 8"):
        decode_offsets([0, 256], 8, 10, word_bits=8)
    with pytest.raises(ValueError, match=r"words\[0\] = -1 does not fit"):
        decode_offsets([-1], 8, 10, word_bits=8)
    with pytest.raises(ValueError, match=r"words must be integers: words\[0\] = 0\.0"):
        decode_offsets([0.0], 8, 10)
    with pytest.raises(ValueError, match=r"words must be an integer array, not dtype float64"):
        decode_offsets(np.zeros(2), 8, 10)
    with pytest.raises(ValueError, match=r"words must be 1-D, not shape \(1, 1\)"):
        decode_offsets([[0]], 8, 10)
    with pytest.raises(ValueError, match=r"nbits must be an integer >= 0, not -1"):
        decode_offsets([0], -1, 10)
    with pytest.raises(ValueError, match=r"tokens \(the job's M\) = 0 is out of range: it must be "
                                         r"in \[1, 2\*\*32\]"):
        decode_offsets([0], 8, 0)
    with pytest.raises(ValueError, match=r"word_bits = 4 is out of range"):
        decode_offsets([0], 8, 10, word_bits=4)


@pytest.mark.parametrize("M", [2**32 + 1, 2**40])
def test_decode_bounds_M_before_allocating(M):
    """A job's M is at most 2**32 (indices are 32-bit: the RTL's SIC positions): beyond it,
    decode raises ValueError before allocating the mask (2**40 tokens was a MemoryError)."""
    nbits = 5 + M.bit_length()          # a well-formed header, count 0
    with pytest.raises(ValueError, match=rf"^tokens \(the job's M\) = {M} is out of range: it "
                                         rf"must be in \[1, 2\*\*32\]$"):
        decode_offsets([0], nbits, M, 64)
    assert header_bits(2**32) == 5 + 33
    with pytest.raises(ValueError, match=rf"^M \(the job's M\) = {M} is out of range"):
        header_bits(M)


def test_decode_rice_and_dropped_hand_streams():
    # M = 10, Rice order 1, kept set: n = 2, gaps 0 ("10") and 5 ("00" "1" "1"): indices 0, 6.
    assert np.flatnonzero(_decode("001" + "01" + "0010" + "10" + "0011")).tolist() == [0, 6]
    # The same code of the dropped set: every token but 0 and 6 is kept.
    got = _decode("001" + "11" + "0010" + "10" + "0011")
    assert np.flatnonzero(~got).tolist() == [0, 6]
    # Exp-Golomb order 0 of the dropped set, n = 0: every token kept.
    assert _decode("000" + "10" + "0000").all()
    with pytest.raises(ValueError, match=r"code 0 at bit position 9 gives index 10 >= M = 10"):
        _decode("000" + "10" + "0001" + ref_ue(10))


def test_decode_rice_unary_limit():
    # M = 10: a Rice unary part must have fewer than 2 * bit_length(10) = 8 zeros.
    with pytest.raises(ValueError, match=r"code 0 has a unary part of 8 or more zeros \(the Rice "
                                         r"limit 2 \* bit_length\(M\) at M = 10; code starts at "
                                         r"bit position 9\)"):
        _decode("000" + "01" + "0001" + "0" * 8 + "1")
    # 7 zeros: gap 7, index 7.
    assert np.flatnonzero(_decode("000" + "01" + "0001" + "0" * 7 + "1")).tolist() == [7]
    # 8 zeros where the string ends: the limit is hit; 7 zeros there: the code runs past nbits.
    with pytest.raises(ValueError, match=r"unary part of 8 or more zeros"):
        _decode("000" + "01" + "0001" + "0" * 8)
    with pytest.raises(ValueError, match=r"code 0 runs past nbits = 16: its prefix of zeros"):
        _decode("000" + "01" + "0001" + "0" * 7)
    # Rice order 2, remainder bits cut off by nbits.
    with pytest.raises(ValueError, match=r"code 0 runs past nbits = 11: it starts at bit "
                                         r"position 9 and needs 3 bits"):
        _decode("010" + "01" + "0001" + "10")
