# amaranth: UnusedElaboratable=no
"""The offset decoder's stage 1, :class:`rtl.sec.code_parser.CodeParser`, alone in the Amaranth
simulator: the testbench plays the decoder's part (a ``start`` with ``nbits``, then the
registered ``tokens``, ``hb`` and ``running``; ``error`` after a ``fail`` or ``short``; the job
ends when the words are all taken and the codes are out), feeds the code words with seeded input
idles and takes the parsed codes with seeded back-pressure, under the stream-rule monitor on both
streams. Every parsed code is compared with what golden gives for it (the coded set's gaps of
:func:`golden.offsets.decode_offsets`' mask, their lengths by :func:`golden.offsets.expgolomb_bits`
or :func:`golden.offsets.rice_bits`), and the header's fields with the scheme golden coded.

The cases: golden's regression masks under the four stall patterns; the edges (shortest and
longest codes, the longest the window allows, empty jobs, M = 1, zero gaps) at three shapes; each
of the 32 schemes; one code per cycle; ``trail``; each malformed string the parser flags, and
the job after it; ``short``; a seeded random regression at two shapes."""

import numpy as np
import pytest
from amaranth.sim import Simulator
from helpers import OFFSET_SHAPES

import golden
from golden.offsets import (
    DROPPED,
    EXPGOLOMB,
    KEPT,
    RICE,
    SCHEMES,
    Scheme,
    adaptive_scheme,
    expgolomb_bits,
    gaps_from_mask,
    rice_bits,
)
from rtl.params import FocusParams
from rtl.sec.code_parser import CodeParser, DecodeError, decode_field_bits, leading_zero_limit
from sim.offsets import as_scheme, golden_code, random_mask, regression_masks, usable
from sim.streams import CLOCK_PERIOD, Stalls, stream_put, streams_monitor, unpack

SMALL = OFFSET_SHAPES[0]                # M 64, word 8: the header and long codes span words
STALL = 0.35
#: The four stall patterns: (input idles, output back-pressure).
PATTERNS = {"none": (0.0, 0.0), "idles": (STALL, 0.0), "backpressure": (0.0, STALL),
            "both": (STALL, STALL)}


# ---- golden's expectation --------------------------------------------------------------------

def golden_scheme(mask, scheme):
    """The scheme golden codes ``mask`` with: ``scheme`` (an int is a kept-set Exp-Golomb
    order), or golden's adaptive choice for None."""
    scheme = as_scheme(scheme)
    return adaptive_scheme(mask) if scheme is None else scheme


def expected_job(p, mask, scheme):
    """``(words, nbits, M, header, codes)`` of ``mask`` coded by golden in ``scheme`` (None:
    adaptive): ``header`` the fields the parser must show (order, dropped, rice, kept);
    ``codes`` one dict per parsed code, as :func:`parsed` reads the parser's beat: the code's
    value ``v`` (its bits, leading zeros included), ``shift`` (:func:`decode_field_bits` less
    its length), ``quotient`` (a Rice code's unary part, else 0: v + (quotient - 1) * 2**e is
    the gap), ``last`` and ``trail``."""
    mask = np.asarray(mask, bool)
    words, nbits = golden_code(mask, scheme, p.word_bits)
    words = [int(w) for w in words]
    assert np.array_equal(golden.decode_offsets(words, nbits, mask.size, p.word_bits), mask)
    s, f, e = golden_scheme(mask, scheme)
    coded = mask if s == KEPT else ~mask
    gaps = gaps_from_mask(coded).tolist()
    if f == RICE:
        lengths = rice_bits(np.array(gaps, np.int64), e).tolist()
    else:
        lengths = expgolomb_bits(np.array(gaps, np.int64), e).tolist()
    fw = decode_field_bits(p)
    codes = []
    for k, (g, length) in enumerate(zip(gaps, lengths, strict=True)):
        if f == RICE:           # q zeros, a one, the e low bits: v = 2**e + r
            v, q = (1 << e) | (g & ((1 << e) - 1)), g >> e
        else:                   # zeros, then g + 2**e
            v, q = g + (1 << e), 0
        assert v + ((q - 1) << e) == g
        codes.append({"v": v, "shift": fw - length, "quotient": q,
                      "last": int(k == len(gaps) - 1), "trail": 0})
    header = {"order": e, "dropped": s, "rice": f, "kept": int(mask.sum())}
    return words, nbits, mask.size, header, codes


def parsed(beat):
    """A parsed code as :func:`expected_job` describes it (``top >> shift`` is the value)."""
    return {"v": beat["top"] >> beat["shift"], "shift": beat["shift"],
            "quotient": beat["quotient"],
            "last": beat["last"], "trail": beat["trail"]}


# ---- the testbench ---------------------------------------------------------------------------

def run_parser(p, jobs, *, idles=0.0, backpressure=0.0, seed=0, max_cycles=None):
    """Runs ``jobs`` (``(words, nbits, M)``) back to back through one :class:`CodeParser`, the
    testbench in the decoder's place (module docstring); the words of all jobs are offered
    back to back, ``last`` on each job's final word. Returns per job a dict: ``codes`` (the
    parsed beats, :func:`parsed`), ``header`` (order, dropped, rice, kept at the job's end),
    ``fail`` (the ``cause`` of the first ``fail``, or None), ``short``, ``cycles`` (start to
    end, inclusive)."""
    dut = CodeParser(p)
    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    results = [{"codes": [], "fail": None, "short": False} for _ in jobs]
    current = [0]
    if max_cycles is None:
        beats = sum(len(w) + M for w, _, M in jobs)
        max_cycles = 2000 + int(8 * beats / (1.0 - max(idles, backpressure)))

    def on_code(cycle, payload):
        results[current[0]]["codes"].append(parsed(unpack(payload)))

    sim.add_testbench(streams_monitor({"i_stream": (dut.i_stream, None, None),
                                       "o_stream": (dut.o_stream, None, on_code)}),
                      background=True)

    async def feed(ctx):
        payloads = [{"word": w, "nbits": 0, "last": int(k == len(words) - 1)}
                    for words, _, _ in jobs for k, w in enumerate(words)]
        await stream_put(ctx, dut.i_stream, payloads, Stalls(idles, f"{seed}:i_stream"))
    sim.add_testbench(feed, background=True)

    async def sink(ctx):
        stalls = Stalls(backpressure, f"{seed}:o_stream")
        while True:
            ctx.set(dut.o_stream.ready, not stalls())
            await ctx.tick()
    sim.add_testbench(sink, background=True)

    async def decoder(ctx):
        cycle = 0
        for k, (_, nbits, M) in enumerate(jobs):
            current[0] = k
            result = results[k]
            ctx.set(dut.start, 1)
            ctx.set(dut.nbits, nbits)
            await ctx.tick()
            first = cycle
            cycle += 1
            ctx.set(dut.start, 0)
            ctx.set(dut.tokens, M)
            ctx.set(dut.hb, M.bit_length())
            ctx.set(dut.running, 1)
            ctx.set(dut.error, 0)
            while True:
                *_, fail, cause, short, fin, in_done, e, s, f, kept = await ctx.tick().sample(
                    dut.fail, dut.cause, dut.short, dut.fin, dut.in_done,
                    dut.order, dut.dropped, dut.rice, dut.kept)
                cycle += 1
                assert cycle < max_cycles, f"job {k} not done after {max_cycles} cycles"
                if (fail or short) and ctx.get(dut.running) and not ctx.get(dut.error):
                    if fail and result["fail"] is None:
                        result["fail"] = DecodeError(cause)
                    result["short"] |= bool(short)
                    ctx.set(dut.error, 1)
                if in_done and (fin or result["fail"] is not None or result["short"]):
                    break
            result["header"] = {"order": int(e), "dropped": int(s), "rice": int(f),
                                "kept": int(kept)}
            result["cycles"] = cycle - first
            ctx.set(dut.running, 0)
            await ctx.tick()            # one idle cycle between jobs
            cycle += 1
    sim.add_testbench(decoder)
    sim.run()
    return results


def check(cases, results):
    """Each job's parsed codes and header equal golden's (``cases``: :func:`expected_job`)."""
    for k, ((words, nbits, M, header, codes), result) in enumerate(
            zip(cases, results, strict=True)):
        what = f"job {k}: M {M}, nbits {nbits}, words {words}"
        assert result["fail"] is None and not result["short"], (
            f"{what}: flagged {result['fail']} / short {result['short']}")
        assert result["codes"] == codes, f"{what}: RTL {result['codes']}, golden {codes}"
        assert result["header"] == header, f"{what}: RTL {result['header']}, golden {header}"


def run_and_check(p, masks, **stalls):
    """Golden's codes of ``masks`` (``(mask, scheme)`` pairs) through the parser, checked
    (:func:`check`); returns the cases (:func:`expected_job`) and the results."""
    cases = [expected_job(p, mask, scheme) for mask, scheme in masks]
    results = run_parser(p, [case[:3] for case in cases], **stalls)
    check(cases, results)
    return cases, results


def bits_mask(M, kept):
    """A mask of M tokens with the tokens ``kept`` kept."""
    mask = np.zeros(M, bool)
    mask[list(kept)] = True
    return mask


def edge_masks(p):
    """The edges at M = ``tokens`` and M = 1, each with the scheme named: the shortest codes
    (gap 0 at order 0: one bit each, both families), the longest Exp-Golomb code the window
    allows (only token M - 1 kept, order 0: Z - 1 leading zeros, Z =
    :func:`leading_zero_limit`), the longest Rice unary part the limit allows (2 *
    bit_length(M) - 1 zeros) and the longest Rice code at this M, gap 0 at order 7, the dropped
    set (gaps of 0, a first gap of 1), empty jobs (n = 0: the header alone, kept and dropped
    set, the all-zero string at M = 1)."""
    M, hb = p.tokens, p.tokens.bit_length()
    q = 2 * hb - 1                      # the longest unary part allowed
    rice_e = max(e for e in range(8) if (q << e) + (1 << e) - 1 <= M - 1)
    return [
        (np.ones(M, bool), Scheme(KEPT, EXPGOLOMB, 0)),              # all codes 1 bit
        (np.ones(M, bool), Scheme(KEPT, RICE, 0)),                   # Rice "1" codes
        (bits_mask(M, [M - 1]), Scheme(KEPT, EXPGOLOMB, 0)),         # the longest EG code
        (bits_mask(M, [M - 1]), Scheme(DROPPED, EXPGOLOMB, 0)),      # M - 1 one-bit codes
        (bits_mask(M, [q]), Scheme(KEPT, RICE, 0)),                  # q zeros: the limit - 1
        (bits_mask(M, [(q << rice_e) + (1 << rice_e) - 1]),          # the longest Rice code
         Scheme(KEPT, RICE, rice_e)),
        (bits_mask(M, [0, M - 1]), Scheme(KEPT, EXPGOLOMB, 7)),      # gap 0 at order 7
        (np.zeros(M, bool), Scheme(KEPT, EXPGOLOMB, 0)),             # n = 0: the header only
        (np.ones(M, bool), Scheme(DROPPED, RICE, 3)),                # n = 0, dropped set
        (np.zeros(1, bool), Scheme(KEPT, EXPGOLOMB, 0)),             # M = 1, all bits 0
        (np.ones(1, bool), Scheme(KEPT, EXPGOLOMB, 0)),              # M = 1, one code "1"
        (np.ones(1, bool), Scheme(DROPPED, RICE, 7)),                # M = 1, n = 0, e = 7
        (bits_mask(M, [0]), Scheme(DROPPED, EXPGOLOMB, 0)),          # gap 1, then gaps 0
    ]


# ---- the tests -------------------------------------------------------------------------------

@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_regression_under_stalls(pattern):
    """Golden's regression masks (edges, then random masks over all 32 schemes and the adaptive
    one) under each stall pattern: every parsed code and header as golden's."""
    idles, backpressure = PATTERNS[pattern]
    masks = regression_masks(SMALL, 70, seed=21)
    run_and_check(SMALL, masks, idles=idles, backpressure=backpressure, seed=len(pattern))


@pytest.mark.parametrize("p", [OFFSET_SHAPES[0], OFFSET_SHAPES[2], OFFSET_SHAPES[4]],
                         ids=lambda p: p.tag)
def test_edges(p):
    """:func:`edge_masks` at three shapes (words of 8, 32 and 16 bits; M up to 256, whose
    longest codes are longer than a word), with stalls on both sides."""
    masks = edge_masks(p)
    assert leading_zero_limit(p) == p.tokens.bit_length()
    cases, results = run_and_check(p, masks, idles=0.3, backpressure=0.3, seed=p.tokens)
    fw = decode_field_bits(p)
    # The edges reach what they claim: one-bit codes, the longest Exp-Golomb code (Z - 1
    # leading zeros), the longest allowed Rice unary part.
    lengths = {fw - c["shift"] for case in cases for c in case[4]}
    q = 2 * p.tokens.bit_length() - 1
    assert min(lengths) == 1
    assert 2 * (leading_zero_limit(p) - 1) + 1 in lengths          # Z - 1 zeros, a one, Z - 1
    assert q + 1 in lengths                                         # Rice: q zeros and a one
    rice_e = max(e for e in range(8) if (q << e) + (1 << e) - 1 < p.tokens)
    assert max(lengths) == max(q + 1 + rice_e, 2 * leading_zero_limit(p) - 1)


def test_every_scheme():
    """Each of the 32 schemes (the parser reads them all, whatever ``offset_schemes`` the encoder
    was built with) on masks with short and long gaps, kept and dropped, no stalls."""
    rng = np.random.default_rng(5)
    masks = []
    for scheme in SCHEMES:
        while len(masks) < 2 * (scheme.index + 1):
            mask = random_mask(int(rng.integers(1, SMALL.tokens + 1)), rng)
            if usable(mask, scheme) == scheme:          # Rice: no quotient over the limit
                masks.append((mask, scheme))
    cases, _ = run_and_check(SMALL, masks)
    seen = {(c[3]["dropped"], c[3]["rice"], c[3]["order"]) for c in cases}
    assert seen == set(SCHEMES)


def test_throughput_one_code_per_cycle():
    """No stalls: a job of M one-bit codes takes M to M + 7 cycles from its start to its end
    (one code per cycle)."""
    M = SMALL.tokens
    cases, results = run_and_check(SMALL, [(np.ones(M, bool), Scheme(KEPT, EXPGOLOMB, 0))])
    words = len(cases[0][0])
    assert M <= results[0]["cycles"] <= M + 7, (results[0]["cycles"], words)


def _code(bits, word_bits=8):
    """Words and nbits of a bit string (padded with zeros)."""
    padded = bits + "0" * (-len(bits) % word_bits)
    return [int(padded[k:k + word_bits], 2) for k in range(0, len(padded), word_bits)], len(bits)


def test_trailing_bits_flag_the_last_code():
    """One code and a bit after it (golden: trailing bits): the code leaves with ``last`` and
    ``trail`` set (the decoder's stage 2 raises TRAILING); without the extra bit ``trail`` is
    clear. (M = 5: the header "000 00 001", the code "1".)"""
    for bits, trail in (("000" + "00" + "001" + "1" + "0", 1), ("000" + "00" + "001" + "1", 0)):
        words, nbits = _code(bits)
        if trail:
            with pytest.raises(ValueError, match="trailing bits"):
                golden.decode_offsets(words, nbits, 5, 8)
        else:
            assert golden.decode_offsets(words, nbits, 5, 8).tolist() == [1, 0, 0, 0, 0]
        (result,) = run_parser(SMALL, [(words, nbits, 5)])
        assert result["fail"] is None
        assert result["codes"] == [{"v": 1, "shift": decode_field_bits(SMALL) - 1, "quotient": 0,
                                    "last": 1, "trail": trail}]


#: Malformed strings the parser itself flags (M = 5, count field 3 bits), with the codes it
#: gives before the bad one (their gaps).
MALFORMED = {
    "COUNT": (*_code("000" + "00" + "110"), 5, []),
    "ZEROS": (*_code("000" + "00" + "001" + "0" * 7 + "1" + "0" * 7), 5, []),
    "ZEROS_second": (*_code("000" + "00" + "010" + "1" + "0" * 7 + "1" + "0" * 7), 5, [0]),
    "TRUNCATED": (*_code("000" + "00" + "001" + "001"), 5, []),
    "TRUNCATED_rice": (*_code("010" + "01" + "001" + "001"), 5, []),
    "TRAILING": (*_code("000" + "11" + "000" + "1"), 5, []),     # n = 0 and a bit after
    "UNARY": (*_code("000" + "01" + "001" + "0" * 6 + "1"), 5, []),
    "UNARY_end": (*_code("011" + "11" + "001" + "0" * 6), 5, []),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_codes(case):
    """Golden rejects each string; the parser gives the codes before the bad one, raises
    ``fail`` with the cause, takes the rest of the words, and parses the next job (golden's)."""
    words, nbits, M, gaps = MALFORMED[case]
    with pytest.raises(ValueError):
        golden.decode_offsets(words, nbits, M, 8)
    good = expected_job(SMALL, bits_mask(5, [1, 2, 4]), Scheme(KEPT, EXPGOLOMB, 0))
    bad, after = run_parser(SMALL, [(words + [0xFF, 0x00], nbits, M), good[:3]],
                            idles=0.3, backpressure=0.3, seed=len(case))
    assert bad["fail"] is DecodeError[case.split("_")[0]]
    assert [c["v"] + ((c["quotient"] - 1) << bad["header"]["order"])
            for c in bad["codes"]] == gaps
    check([good], [after])


def test_short_words():
    """``short``: the word flagged ``last`` is taken while the words hold fewer than ``nbits``
    bits (golden: nbits larger than the words hold)."""
    words, nbits = _code("000" + "00" + "001" + "1")
    with pytest.raises(ValueError, match="larger than"):
        golden.decode_offsets(words, 17, 5, 8)
    (result,) = run_parser(SMALL, [(words, 17, 5)])
    assert result["short"]


@pytest.mark.parametrize("p", [SMALL, FocusParams(tokens=100, lanes=3, word_bits=16)],
                         ids=lambda p: p.tag)
def test_random_regression(p):
    """A seeded random regression: 120 random masks (sizes 1..M, edges favoured; empty, full,
    uniform, single, clustered, sparse), a scheme drawn from the 32 and the adaptive one, under
    both stalls."""
    rng = np.random.default_rng(2024 + p.tokens)
    masks = []
    for _ in range(120):
        M = int(rng.integers(1, p.tokens + 1)) if rng.random() < 0.7 else p.tokens
        mask = random_mask(M, rng)
        scheme = [None, *SCHEMES][int(rng.integers(33))]
        masks.append((mask, usable(mask, scheme)))
    run_and_check(p, masks, idles=0.25, backpressure=0.25, seed=7)
