# amaranth: UnusedElaboratable=no
"""The offset encoder in the Amaranth simulator (fast tier) against golden.encode_offsets."""

import numpy as np
import pytest
from helpers import OFFSET_SHAPES

import golden
import sim
from golden.cycles import encode_fields, encode_rtl_cycles
from golden.offsets import (
    DROPPED,
    EXPGOLOMB,
    KEPT,
    RICE,
    SCHEMES,
    Scheme,
    adaptive_order,
    adaptive_scheme,
)
from rtl.params import FocusParams
from rtl.sec.offset_encoder import EncodeError, OffsetEncoder, bit_length, leading_one_code
from sim.offsets import (
    ENCODER_PORTS,
    check_encoder_results,
    encoder_job,
    encoder_result,
    golden_code,
    mask_beats,
    regression_masks,
    run_encoder_jobs,
    run_jobs,
)
from sim.streams import Stalls

SHAPES = OFFSET_SHAPES
SMALL = SHAPES[0]
NARROW = "kept-exp-golomb"
#: Both values of FocusParams.offset_schemes.
SCHEME_SETS = ("all", NARROW)
#: Cycles of the scheme choice: one per scheme the encoder has, plus one (spec 3.3).
CHOOSE_CYCLES = {"all": 33, NARROW: 9}

#: The H.264 ue(v) table (ITU-T H.264 clause 9.1, Table 9-2): codeNum -> bit string.
UE_TABLE = {0: "1", 1: "010", 2: "011", 3: "00100", 4: "00101", 5: "00110", 6: "00111",
            7: "0001000", 8: "0001001"}


def tag(p):
    return p.tag


#: A mask of at most 14 tokens: gaps of 4 bits, narrower than the highest orders' 2**e - 1.
TINY = FocusParams(tokens=14, lanes=3, word_bits=8)


@pytest.mark.parametrize("p", SHAPES + [SHAPES[0].replace(offset_schemes=NARROW),
                                        SHAPES[-1].replace(offset_schemes=NARROW), TINY],
                         ids=tag)
def test_random_masks_match_golden(p):
    """Edges and random masks (M 1..tokens, densities 0..1, every scheme the encoder has and
    adaptive), back to back, no stalls; the cycles follow the documented ingest + emission model
    (``ENCODE_RTL_CONSTANT``) exactly or one more; 24 cycles fewer with the 8 kept-set
    Exp-Golomb schemes only, whose choice is that much shorter."""
    jobs = regression_masks(p, 120, seed=p.tokens + p.word_bits)
    schemes = CHOOSE_CYCLES[p.offset_schemes] - 1
    results = run_encoder_jobs(p, jobs)
    check_encoder_results(p, jobs, results)
    for (mask, _order), result in zip(jobs, results, strict=True):
        dropped = bool((int(result["o_stream"][0]["word"]) >> (p.word_bits - 4)) & 1)
        model = encode_rtl_cycles(mask, p.lanes, len(result["o_stream"]), dropped, schemes)
        assert model <= result["cycles"] <= model + 1, (
            f"M {mask.size}, n {int(mask.sum())}: {result['cycles']} cycles, model {model}")


@pytest.mark.parametrize("schemes", SCHEME_SETS)
@pytest.mark.parametrize("backpressure", [0.0, 0.3], ids=["nobp", "bp"])
@pytest.mark.parametrize("idle", [0.0, 0.3], ids=["noidle", "idle"])
def test_under_stalls(idle, backpressure, schemes):
    """Input idles and output back-pressure (and both), with stream monitors on every port; the
    jobs cover adaptive and every fixed scheme the encoder has (32, or the 8 kept-set
    Exp-Golomb ones)."""
    p = SMALL.replace(offset_schemes=schemes)
    jobs = regression_masks(p, 70, seed=7)
    stalls = {"cfg_stream": idle, "i_stream": idle, "o_stream": backpressure}
    check_encoder_results(p, jobs, run_encoder_jobs(p, jobs, stalls=stalls, seed=5))


def test_long_backpressure():
    """ready low for 150 cycles from cycle 30: the packer holds; nothing lost or duplicated."""
    jobs = [(np.ones(64, bool), 7), (np.ones(64, bool), None), (np.arange(64) % 3 == 0, 0),
            (np.arange(64) % 5 != 0, Scheme(DROPPED, RICE, 1))]
    payloads = [encoder_job(mask, order, SMALL.lanes) for mask, order in jobs]
    results = run_jobs(OffsetEncoder(SMALL), ENCODER_PORTS, payloads,
                       stalls={"o_stream": Stalls(windows=[(30, 150)])})
    check_encoder_results(SMALL, jobs, results)


def test_h264_ue_table_on_rtl_output():
    """Order 0 is H.264's ue(v): a mask with one kept token after codeNum dropped ones encodes
    to the header and then exactly the table's bits, read from the RTL's words."""
    for word_bits in (8, 32):
        p = FocusParams(tokens=16, word_bits=word_bits)
        for code_num, code in UE_TABLE.items():
            mask = np.zeros(code_num + 1, bool)
            mask[code_num] = True
            words, nbits = sim.encode_offsets(mask, 0, word_bits, params=p)
            bits = "".join(format(int(w), f"0{word_bits}b") for w in words)
            header = 5 + mask.size.bit_length()
            assert bits[:header] == "00000" + format(1, f"0{header - 5}b")
            assert bits[header:nbits] == code, f"codeNum {code_num}: {bits[header:nbits]}"
            assert set(bits[nbits:]) <= {"0"}, "padding must be zeros"


def test_adaptive_scheme_and_stats():
    rng = np.random.default_rng(3)
    for density in (0.05, 0.3, 0.6, 0.95):
        mask = rng.random(200) < density
        stats = {}
        words, nbits = sim.encode_offsets(mask, None, 16, stats=stats)
        scheme = adaptive_scheme(mask)
        assert (stats["coded"], stats["family"], stats["order"]) == tuple(scheme)
        assert stats["kept"] == int(mask.sum())
        assert stats["cycles"] > 0
        want = golden.encode_offsets(mask, None, 16)
        assert np.array_equal(words, want[0]) and nbits == want[1]


def test_one_code_per_cycle_once_the_order_is_known():
    """All 256 tokens kept at order 0: 1-bit codes, 256 codes in about 256 + a few cycles of
    emission (beats of 4 kept tokens take 4 cycles each to ingest)."""
    p = FocusParams(tokens=256, lanes=4, word_bits=32)
    mask = np.ones(256, bool)
    (result,) = run_encoder_jobs(p, [(mask, 0)])
    assert encode_fields(mask) == 257 and len(result["o_stream"]) < 257
    assert result["cycles"] <= encode_rtl_cycles(mask, p.lanes, len(result["o_stream"])) + 1


def _error_job(p, cfg, beats):
    return {"cfg_stream": [cfg], "i_stream": beats}


def test_fixed_rice_that_cannot_code_the_mask_is_refused():
    """A fixed Rice scheme whose quotient would reach 2 * bit_length(M): QUOTIENT once the mask
    is counted, no word; golden raises ValueError; the next job is encoded."""
    p = FocusParams(tokens=64, lanes=4, word_bits=16)
    mask = np.zeros(40, bool)
    mask[[0, 13]] = True                 # kept gap 12: quotient 12 >= 2 * bit_length(40) = 12
    for scheme in (Scheme(0, RICE, 0), Scheme(DROPPED, RICE, 0)):
        bad = ~mask if scheme.coded else mask
        with pytest.raises(ValueError, match=r"cannot code this mask"):
            golden_code(bad, scheme, 16)
        with pytest.raises(ValueError, match=r"cannot code this mask"):
            sim.encode_offsets(bad, 0, 16, coded=scheme.coded, family="rice", params=p)
        good = Scheme(scheme.coded, RICE, 1)
        results = run_encoder_jobs(p, [(bad, scheme), (bad, good)])
        assert results[0]["error"] == 1 and results[0]["cause"] == EncodeError.QUOTIENT.value
        assert results[0]["o_stream"] == []
        check_encoder_results(p, [(bad, good)], results[1:])


@pytest.mark.parametrize("case", ["m_zero", "m_too_big", "last_early", "last_missing",
                                  "padding"])
def test_malformed_jobs_raise_error_and_recover(case):
    """Bad settings or a malformed mask stream: error and cause, no word, the rest of the job's
    beats dropped, idle soon after; the next job is encoded correctly."""
    p = FocusParams(tokens=16, lanes=4, word_bits=8)
    good = np.array([1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1], bool)
    beats = mask_beats(good, p.lanes)                       # 3 beats, last on the third
    cfg = {"tokens": good.size, "order": 1, "adaptive": 0}
    bad, cause = {
        "m_zero": (_error_job(p, {**cfg, "tokens": 0}, beats), EncodeError.CONFIG),
        "m_too_big": (_error_job(p, {**cfg, "tokens": 17}, beats), EncodeError.CONFIG),
        "last_early": (_error_job(p, cfg, [beats[0], {**beats[1], "last": 1}]),
                       EncodeError.LAST),
        "last_missing": (_error_job(p, cfg, [*beats[:2], {**beats[2], "last": 0},
                                             {"keep": 15, "last": 1}]), EncodeError.LAST),
        "padding": (_error_job(p, cfg, [*beats[:2], {**beats[2], "keep": beats[2]["keep"] | 8}]),
                    EncodeError.PADDING),
    }[case]
    results = run_jobs(OffsetEncoder(p), ENCODER_PORTS, [bad, encoder_job(good, 1, p.lanes)])
    assert results[0]["error"] == 1 and results[0]["cause"] == cause.value
    assert results[0]["o_stream"] == []
    assert results[0]["end"] <= len(bad["i_stream"]) + 3
    assert results[1]["error"] == 0
    words, nbits = encoder_result(results[1])
    want = golden.encode_offsets(good, 1, 8)
    assert np.array_equal(words, want[0]) and nbits == want[1]


# ---- the sim API: the same ValueErrors as golden ---------------------------------------------

@pytest.mark.parametrize("args, match", [
    ((np.zeros((2, 3), bool),), r"^mask must be 1-D"),
    ((np.zeros(0, bool),), r"^mask is empty"),
    ((np.array([0, 2, 1]),), r"^mask must hold only 0 and 1"),
    ((np.zeros(4, np.float32),), r"^mask must be a bool array"),
    ((np.ones(4, bool), 8), r"^order must be None \(adaptive\) or an integer in \[0, 7\]"),
    ((np.ones(4, bool), None, 7), r"^word_bits = 7 is out of range"),
])
def test_sim_raises_golden_errors(args, match):
    with pytest.raises(ValueError, match=match):
        golden.encode_offsets(*args)
    with pytest.raises(ValueError, match=match):
        sim.encode_offsets(*args)


def test_sim_names_the_masks_M_beyond_the_rtl_limit():
    """golden encodes a mask of 70 000 tokens; the RTL holds at most 65 536: the error names the
    job's M and that limit (not a FocusParams value fitted from it)."""
    mask = np.zeros(70_000, bool)
    mask[[5, 69_999]] = True
    golden.encode_offsets(mask)
    with pytest.raises(ValueError, match=r"^M = 70000 is out of the RTL's range \[1, 65536\] "
                                         r"\(FocusParams\.tokens\)$"):
        sim.encode_offsets(mask)


def test_sim_rejects_jobs_the_params_cannot_hold():
    p = FocusParams(tokens=16, word_bits=8)
    with pytest.raises(ValueError, match=r"^M = 17 > tokens = 16"):
        sim.encode_offsets(np.ones(17, bool), 0, 8, params=p)
    with pytest.raises(ValueError, match=r"^params.word_bits = 8 does not match word_bits = 16"):
        sim.encode_offsets(np.ones(4, bool), 0, 16, params=p)
    with pytest.raises(ValueError, match=r"^Unknown simulator 'xsim'"):
        sim.encode_offsets(np.ones(4, bool), simulator="xsim")


# ---- offset_schemes = "kept-exp-golomb" ------------------------------------------------------

def test_narrow_adaptive_choice_is_the_best_kept_set_order():
    """Masks where the 32-scheme choice takes the dropped set or Rice: the narrow encoder's
    adaptive code is the kept set in Exp-Golomb at the order with the fewest bits (golden's
    ``adaptive_order``, the choice before the set and the family were added), header s = f = 0,
    and golden's restricted choice is that scheme."""
    p = SMALL.replace(offset_schemes=NARROW)
    rng = np.random.default_rng(11)
    masks = [np.ones(64, bool), np.arange(64) % 9 != 0, rng.random(64) < 0.9,
             np.arange(40) % 2 == 0, rng.random(64) < 0.5]
    wide = [adaptive_scheme(mask) for mask in masks]
    assert any(s.coded == DROPPED for s in wide) and any(s.family == RICE for s in wide)
    results = run_encoder_jobs(p, [(mask, None) for mask in masks], stalls=0.3, seed=2)
    for mask, result in zip(masks, results, strict=True):
        words, nbits = encoder_result(result)
        order = adaptive_order(mask)
        assert adaptive_scheme(mask, schemes=NARROW) == Scheme(KEPT, EXPGOLOMB, order)
        want = golden.encode_offsets(mask, order, 8)
        assert nbits == want[1] and np.array_equal(words, want[0])
        assert int(words[0]) >> 3 == order << 2         # e | s = 0 | f = 0


@pytest.mark.parametrize("scheme", [Scheme(DROPPED, EXPGOLOMB, 0), Scheme(KEPT, RICE, 3),
                                    Scheme(DROPPED, RICE, 7)])
def test_narrow_encoder_refuses_the_schemes_it_lacks(scheme):
    """A fixed dropped-set or Rice scheme asked of a narrow encoder: error, cause SCHEME, no word,
    its mask beats drained, idle soon after the last one; the next job is encoded. golden and sim
    raise the same ValueError (the RTL is not run for it)."""
    p = FocusParams(tokens=16, lanes=4, word_bits=8, offset_schemes=NARROW)
    good = np.array([1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1], bool)
    coded, family = ("kept", "dropped")[scheme.coded], ("expgolomb", "rice")[scheme.family]
    match = (rf"^the scheme coded = '{coded}', family = '{family}' is not available with "
             rf"schemes = 'kept-exp-golomb'")
    with pytest.raises(ValueError, match=match):
        golden.encode_offsets(good, scheme.order, 8, coded=coded, family=family, schemes=NARROW)
    with pytest.raises(ValueError, match=match):
        sim.encode_offsets(good, scheme.order, 8, coded=coded, family=family, schemes=NARROW,
                           params=p)
    bad = encoder_job(good, scheme, p.lanes)
    results = run_jobs(OffsetEncoder(p), ENCODER_PORTS, [bad, encoder_job(good, None, p.lanes)],
                       stalls={"cfg_stream": 0.3, "i_stream": 0.3, "o_stream": 0.3}, seed=4)
    assert results[0]["error"] == 1 and results[0]["cause"] == EncodeError.SCHEME.value
    assert results[0]["o_stream"] == []
    check_encoder_results(p, [(good, None)], results[1:])
    # No stalls: idle one cycle after the last of the bad job's 3 beats.
    results = run_jobs(OffsetEncoder(p), ENCODER_PORTS, [bad, encoder_job(good, 2, p.lanes)])
    assert results[0]["cause"] == EncodeError.SCHEME.value
    assert results[0]["end"] <= len(bad["i_stream"]) + 3
    check_encoder_results(p, [(good, 2)], results[1:])


def test_narrow_encoder_takes_the_kept_set_schemes_and_adaptive():
    """Each of the 8 schemes a narrow encoder has, fixed, and a mask the dropped set would code
    best (all kept), through the RTL under stalls."""
    p = SHAPES[1].replace(offset_schemes=NARROW)
    rng = np.random.default_rng(5)
    jobs = [(rng.random(int(rng.integers(1, 65))) < 0.4, scheme) for scheme in SCHEMES[:8]]
    jobs += [(np.ones(64, bool), None), (np.ones(64, bool), 0)]
    check_encoder_results(p, jobs, run_encoder_jobs(p, jobs, stalls=0.3, seed=9))


def test_sim_schemes_must_match_the_params():
    p = FocusParams(tokens=16, word_bits=8, offset_schemes=NARROW)
    with pytest.raises(ValueError, match=r"^params.offset_schemes = 'kept-exp-golomb' does not "
                                         r"match schemes = 'all'$"):
        sim.encode_offsets(np.ones(4, bool), 0, 8, params=p)
    with pytest.raises(ValueError, match=r"^schemes must be 'all' or 'kept-exp-golomb', not "
                                         r"'rice'$"):
        sim.encode_offsets(np.ones(4, bool), 0, 8, schemes="rice")
    with pytest.raises(ValueError, match=r"^schemes must be 'all' or 'kept-exp-golomb'"):
        golden.encode_offsets(np.ones(4, bool), schemes=None)


def _check_every_value(width, build, expect):
    """Drives every ``width``-bit value into the combinational ``build(value)`` and compares it
    with ``expect(v)``."""
    from amaranth.hdl import Module, Signal
    from amaranth.sim import Simulator

    m = Module()
    value, out = Signal(width), Signal(8)
    m.d.comb += out.eq(build(value))

    async def testbench(ctx):
        for v in range(1 << width):
            ctx.set(value, v)
            await ctx.delay(1e-9)
            assert ctx.get(out) == expect(v), v

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()


@pytest.mark.parametrize("width", [1, 2, 5, 9, 12])
def test_bit_length_of_every_value(width):
    """The encoder's combinational ``bit_length`` against Python's, for every value of a width."""
    _check_every_value(width, bit_length, int.bit_length)


@pytest.mark.parametrize("width", [1, 3, 8, 11])
def test_leading_one_code_of_every_value(width):
    """``leading_one_code`` against a table looked up by Python's bit length: arbitrary
    constants (zeros, repeats, the widest) and the encoder's Exp-Golomb code lengths."""
    rng = np.random.default_rng(width)
    tables = [[int(c) for c in rng.integers(0, 256, width)],
              [0] * width,
              [max(2 * (i + 1) - 1 - 3, 0) for i in range(width)]]
    for codes in tables:
        _check_every_value(width, lambda v, codes=codes: leading_one_code(v, codes),
                           lambda v, codes=codes: codes[v.bit_length() - 1] if v else 0)
