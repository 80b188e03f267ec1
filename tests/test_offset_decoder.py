# amaranth: UnusedElaboratable=no
"""The offset decoder in the Amaranth simulator (fast tier) against golden.offsets.decode_offsets,
including the fuzzing: thousands of random and mutated streams, each of which must end in
golden's mask or, exactly where golden raises ValueError, in the error flag, within the stated
cycle bound."""

import re

import numpy as np
import pytest
from helpers import OFFSET_SHAPES

import golden
import sim
from rtl.params import FocusParams
from rtl.sec.offset_decoder import DecodeError, OffsetDecoder
from sim.offsets import (
    DECODER_PORTS,
    decoder_job,
    decoder_result,
    fuzz_codes,
    golden_code,
    regression_masks,
    run_decoder_jobs,
    run_jobs,
)
from sim.streams import Stalls

SHAPES = OFFSET_SHAPES
SMALL = SHAPES[0]


def tag(p):
    return p.tag


def golden_or_none(words, nbits, M, word_bits):
    try:
        return golden.decode_offsets(words, nbits, M, word_bits)
    except ValueError:
        return None


def valid_codes(p, count, seed):
    jobs = []
    for mask, order in regression_masks(p, count, seed=seed):
        words, nbits = golden_code(mask, order, p.word_bits)
        jobs.append(([int(w) for w in words], nbits, mask.size))
    return jobs


def dropped_set(words, nbits, word_bits):
    """Whether a string's header says the dropped set is coded (its bit 3; 0 when the string is
    too short to hold it)."""
    return bool(words) and nbits >= 4 and bool((words[0] >> (word_bits - 4)) & 1)


def walked(words, nbits, M, indices, word_bits):
    """What the bounds count as the decoder's index work: the indices written, or for a dropped-
    set code the M positions its walker may step through."""
    return M if dropped_set(words, nbits, word_bits) else indices


def check_jobs(p, jobs, results, bound=True):
    """Each job ends in golden's mask (and the same indices) or, where golden raises, in the
    error flag; without stalls, within ``words + indices written + ceil(M/lanes) + 11`` cycles of
    its config beat (for a dropped-set code M in place of the indices: the walk). Returns the
    number of rejected jobs."""
    rejected = 0
    for k, ((words, nbits, M), result) in enumerate(zip(jobs, results, strict=True)):
        want = golden_or_none(words, nbits, M, p.word_bits)
        what = f"job {k}: words {words}, nbits {nbits}, M {M}"
        if want is None:
            with pytest.raises(ValueError, match=r"^malformed offset code"):
                decoder_result(result, M, p.lanes)     # also checks nothing was written past M
            rejected += 1
        else:
            assert not result["error"], f"{what}: flagged {DecodeError(result['cause']).name}"
            mask, indices = decoder_result(result, M, p.lanes)
            assert np.array_equal(mask, want), f"{what}: RTL {mask}, golden {want}"
            assert indices.tolist() == np.flatnonzero(want).tolist()
        if bound:
            work = walked(words, nbits, M, len(result["idx_stream"]), p.word_bits)
            limit = len(words) + work + -(-M // p.lanes) + 11
            assert result["end"] <= limit, f"{what}: idle after {result['end']} > {limit}"
    return rejected


@pytest.mark.parametrize("p", SHAPES, ids=tag)
def test_valid_codes_match_golden(p):
    """Golden's codes of edge and random masks, every scheme; the cycles lie between
    max(words, n, ceil(M/lanes)) + 8 (5 for n = 0) and words + n + ceil(M/lanes) + 8 for a
    kept-set code, and between max(words, M, ceil(M/lanes)) + 8 and words + M +
    ceil(M/lanes) + 11 for a dropped-set one (the walk over the M positions)."""
    jobs = valid_codes(p, 100, seed=p.tokens + p.word_bits)
    results = run_decoder_jobs(p, jobs)
    assert check_jobs(p, jobs, results) == 0
    for (words, nbits, M), result in zip(jobs, results, strict=True):
        n, beats = len(result["idx_stream"]), -(-M // p.lanes)
        if dropped_set(words, nbits, p.word_bits):
            low, high = max(len(words), M, beats) + 8, len(words) + M + beats + 11
        else:
            # A job with no kept token has no code through the lookahead and the value and
            # index stages: three cycles fewer.
            low, high = max(len(words), n, beats) + (8 if n else 5), len(words) + n + beats + 8
        assert low <= result["cycles"] <= high, (M, n, len(words), result["cycles"])


@pytest.mark.parametrize("p", [SMALL, pytest.param(FocusParams(tokens=100, lanes=3, word_bits=16),
                                                  marks=pytest.mark.slow)], ids=tag)
def test_fuzz(p):
    """1500 random and mutated streams per shape (about a third valid), no stalls."""
    jobs = fuzz_codes(p, 1500, seed=11 + p.word_bits)
    rejected = check_jobs(p, jobs, run_decoder_jobs(p, jobs))
    assert 300 < rejected < 1300, f"{rejected} of {len(jobs)} rejected: the mix is off"


@pytest.mark.parametrize("backpressure", [0.0, 0.3], ids=["nobp", "bp"])
@pytest.mark.parametrize("idle", [0.0, 0.3], ids=["noidle", "idle"])
def test_under_stalls(idle, backpressure):
    """Valid and fuzzed streams under input idles and output back-pressure on both outputs."""
    jobs = valid_codes(SMALL, 40, seed=3) + fuzz_codes(SMALL, 80, seed=4)
    stalls = {"cfg_stream": idle, "i_stream": idle, "o_stream": backpressure,
              "idx_stream": backpressure}
    check_jobs(SMALL, jobs, run_decoder_jobs(SMALL, jobs, stalls=stalls, seed=9), bound=False)


def test_long_backpressure_on_each_output():
    jobs = valid_codes(SMALL, 12, seed=5)
    payloads = [decoder_job(*job) for job in jobs]
    for port in ("o_stream", "idx_stream"):
        results = run_jobs(OffsetDecoder(SMALL), DECODER_PORTS, payloads,
                           stalls={port: Stalls(windows=[(25, 120)])})
        check_jobs(SMALL, jobs, results, bound=False)


def _code(bits, word_bits=8):
    """Words and nbits of a bit string (padded with zeros)."""
    padded = bits + "0" * (-len(bits) % word_bits)
    return [int(padded[k:k + word_bits], 2) for k in range(0, len(padded), word_bits)], len(bits)


# e = 0, M = 5 (count field 3 bits): header "000" + set + family + count.
CAUSES = {
    "CONFIG_zero": (*_code("000" + "00" + "001" + "1"), 0),
    "CONFIG_big": (*_code("000" + "00" + "001" + "1"), 65),
    "HEADER": (_code("000" + "00" + "001")[0], 7, 5),
    "SHORT": (_code("000" + "00" + "001" + "1")[0], 17, 5),
    "COUNT": (*_code("000" + "00" + "110"), 5),
    "ZEROS": (*_code("000" + "00" + "001" + "0" * 7 + "1" + "0" * 7), 5),
    "TRUNCATED": (*_code("000" + "00" + "001" + "001"), 5),
    "TRUNCATED_rice": (*_code("010" + "01" + "001" + "001"), 5),   # Rice 2: the remainder is cut
    "INDEX": (*_code("000" + "00" + "001" + "00110"), 5),          # gap 5: index 5 >= M = 5
    "INDEX_dropped": (*_code("000" + "10" + "010" + "1" + "00101"), 5),   # dropped 0, then 0 + 5
    "INDEX_rice": (*_code("000" + "01" + "001" + "000001"), 5),    # Rice 0, gap 5
    "TRAILING": (*_code("000" + "00" + "001" + "1" + "0"), 5),
    "TRAILING_dropped": (*_code("000" + "11" + "000" + "1"), 5),
    "UNARY": (*_code("000" + "01" + "001" + "0" * 6 + "1"), 5),    # 2 * bit_length(5) = 6 zeros
    "UNARY_end": (*_code("011" + "11" + "001" + "0" * 6), 5),      # the string ends in the zeros
}


@pytest.mark.parametrize("case", sorted(CAUSES))
def test_each_error_cause_and_recovery(case):
    """Each kind of malformed stream: golden raises, the RTL flags it with that cause, writes
    nothing past M, is idle soon after, and decodes the next job correctly."""
    words, nbits, M = CAUSES[case]
    cause = DecodeError[case.split("_")[0]]
    if 1 <= M <= SMALL.tokens:
        with pytest.raises(ValueError):
            golden.decode_offsets(words, nbits, M, 8)
    good = golden.encode_offsets(np.array([0, 1, 1, 0, 1], bool), 0, 8)
    jobs = [(words, nbits, M), ([int(w) for w in good[0]], good[1], 5)]
    results = run_decoder_jobs(SMALL, jobs)
    assert results[0]["error"] == 1 and DecodeError(results[0]["cause"]) is cause
    with pytest.raises(ValueError, match=rf"cause {cause.name}\)$"):
        decoder_result(results[0], max(M, 1), SMALL.lanes)
    assert results[0]["end"] <= len(words) + 11
    mask, _ = decoder_result(results[1], 5, SMALL.lanes)
    assert mask.tolist() == [False, True, True, False, True]


def test_extra_words_and_padding_are_ignored():
    mask = np.array([1, 0, 0, 0, 1, 1, 0, 1, 0], bool)
    words, nbits = golden.encode_offsets(mask, 1, 8)
    noisy = [int(w) for w in words]
    noisy[-1] |= (1 << (8 * len(noisy) - nbits)) - 1          # ones in the padding
    noisy += [0xFF, 0x00, 0xA5]
    assert golden.decode_offsets(noisy, nbits, 9, 8).tolist() == mask.tolist()
    assert sim.decode_offsets(noisy, nbits, 9, 8).tolist() == mask.tolist()


def test_error_drops_the_rest_of_the_job():
    """An error in the first word of a long job: the remaining words are taken and discarded
    without decoding, and nothing more is written."""
    words = _code("000" + "00" + "001" + "00110")[0] + [0xFF] * 20
    results = run_decoder_jobs(SMALL, [(words, 13, 5)])
    assert results[0]["error"] == 1 and results[0]["idx_stream"] == []
    assert results[0]["o_stream"] == []
    assert results[0]["end"] <= len(words) + 4


# ---- the sim API -----------------------------------------------------------------------------

@pytest.mark.parametrize("args, match", [
    (([1], 4, 5, 7), r"^word_bits = 7 is out of range"),
    (([1], 4, 0), r"^tokens \(the job's M\) = 0 is out of range"),
    (([1], 4, 2.0), r"^tokens \(the job's M\) must be an integer"),
    (([[1]], 4, 5), r"^words must be 1-D"),
    (([256], 4, 5, 8), r"^words\[0\] = 256 does not fit in word_bits = 8"),
    (([1.5], 4, 5), r"^words must be integers"),
    (([1], -1, 5), r"^nbits must be an integer >= 0"),
])
def test_sim_raises_golden_errors(args, match):
    with pytest.raises(ValueError, match=match):
        golden.decode_offsets(*args)
    with pytest.raises(ValueError, match=match):
        sim.decode_offsets(*args)


@pytest.mark.parametrize("case", sorted(c for c in CAUSES if not c.startswith("CONFIG")))
def test_sim_malformed_code_raises_golden_error(case):
    """A code the RTL decoder flags raises golden's own ValueError, message and all; the RTL's
    cause is the exception's ``__cause__``."""
    words, nbits, M = CAUSES[case]
    with pytest.raises(ValueError) as want:
        golden.decode_offsets(words, nbits, M, 8)
    with pytest.raises(ValueError) as got:
        sim.decode_offsets(words, nbits, M, 8)
    assert str(got.value) == str(want.value)
    name = case.split("_")[0]
    assert re.search(rf"\(RTL decoder cause {name}\)$", str(got.value.__cause__))


def test_sim_names_the_tokens_beyond_the_rtl_limit():
    words, nbits = golden.encode_offsets(np.zeros(70_000, bool), 0, 32)
    assert not golden.decode_offsets(words, nbits, 70_000).any()
    with pytest.raises(ValueError, match=r"^tokens = 70000 is out of the RTL's range "
                                         r"\[1, 65536\] \(FocusParams\.tokens\)$"):
        sim.decode_offsets(words, nbits, 70_000)


def test_sim_rejects_what_the_interface_cannot_carry():
    """No words, or an nbits wider than the decoder's field: the RTL cannot take the job, and
    golden rejects both, so sim raises golden's error without running it."""
    p = FocusParams(tokens=16, word_bits=8)
    with pytest.raises(ValueError, match=r"^M = 17 > tokens = 16"):
        sim.decode_offsets([0], 8, 17, 8, params=p)
    for words, nbits, M, params in (([], 0, 5, None), ([], 7, 5, None),
                                    ([0] * 128, 1024, 16, p)):
        with pytest.raises(ValueError) as want:
            golden.decode_offsets(words, nbits, M, 8)
        with pytest.raises(ValueError) as got:
            sim.decode_offsets(words, nbits, M, 8, params=params)
        assert str(got.value) == str(want.value)


def test_sim_round_trip_with_stats():
    rng = np.random.default_rng(8)
    mask = rng.random(300) < 0.2
    words, nbits = golden.encode_offsets(mask, None, 32)
    stats = {}
    got = sim.decode_offsets(words, nbits, 300, 32, stalls=0.2, stats=stats, seed=2)
    assert got.tolist() == mask.tolist()
    assert stats["kept"] == int(mask.sum()) and stats["cycles"] > 0


# ---- the index-only decoder (mask=False), as FocusUnit uses it ----------------------------------

INDEX_PORTS = (("cfg_stream", "i_stream"), ("idx_stream",))


def check_index_jobs(p, jobs, results, bound=True):
    """Each job gives golden's kept indices, ``last`` on the final one, or, where golden raises,
    the error flag with no index >= M; without stalls it takes at most ``max(words, n) + 8``
    cycles (a dropped-set code: ``max(words, M) + 10``, the walk) and is idle within ``words + n
    + 11`` cycles of its config beat (M in place of n for a dropped-set code). Returns the number
    of rejected jobs."""
    rejected = 0
    for k, ((words, nbits, M), result) in enumerate(zip(jobs, results, strict=True)):
        want = golden_or_none(words, nbits, M, p.word_bits)
        what = f"job {k}: words {words}, nbits {nbits}, M {M}"
        beats = result["idx_stream"]
        indices = [b["index"] for b in beats]
        assert all(j < M for j in indices), f"{what}: index >= M in {indices}"
        assert not any(b["last"] for b in beats[:-1]), f"{what}: last before the final index"
        if want is None:
            assert result["error"], f"{what}: golden rejects it, the RTL did not flag it"
            rejected += 1
            continue
        assert not result["error"], f"{what}: flagged {DecodeError(result['cause']).name}"
        assert indices == np.flatnonzero(want).tolist(), f"{what}: RTL {indices}"
        assert not beats or beats[-1]["last"], f"{what}: the final index lacks last"
        if bound:
            work = walked(words, nbits, M, len(indices), p.word_bits)
            slack = 10 if dropped_set(words, nbits, p.word_bits) else 8
            assert result["cycles"] <= max(len(words), work) + slack, (what, result["cycles"])
            assert result["end"] <= len(words) + work + 11, (what, result["end"])
    return rejected


# The M = 100 and 256 shapes (most of this file's time) in the slow tier.
@pytest.mark.parametrize("p", SHAPES[:3] + [pytest.param(p, marks=pytest.mark.slow)
                                            for p in SHAPES[3:]], ids=tag)
def test_index_only_decoder_matches_golden(p):
    """``mask=False``: golden's codes of edge and random masks and fuzzed streams; the same
    indices and the same rejections as the full decoder, one index per cycle."""
    dec = OffsetDecoder(p, mask=False)
    assert not dec.has_mask and "o_stream" not in dec.signature.members
    jobs = valid_codes(p, 60, seed=p.tokens + 1) + fuzz_codes(p, 300, seed=p.word_bits + 2)
    results = run_jobs(dec, INDEX_PORTS, [decoder_job(*job) for job in jobs])
    full = run_decoder_jobs(p, jobs)
    assert check_index_jobs(p, jobs, results) > 50
    for job, mine, theirs in zip(jobs, results, full, strict=True):
        assert (mine["error"], mine["cause"]) == (theirs["error"], theirs["cause"]), job


@pytest.mark.parametrize("stalls", [0.3, {"idx_stream": Stalls(windows=[(20, 150)])}],
                         ids=["random", "long"])
def test_index_only_decoder_under_stalls(stalls):
    jobs = valid_codes(SMALL, 30, seed=7) + fuzz_codes(SMALL, 60, seed=8)
    results = run_jobs(OffsetDecoder(SMALL, mask=False), INDEX_PORTS,
                       [decoder_job(*job) for job in jobs], stalls=stalls, seed=4)
    check_index_jobs(SMALL, jobs, results, bound=False)


def test_index_only_decoder_is_not_slowed_by_gaps():
    """A clustered mask (long runs of dropped tokens): the full decoder's mask builder spends a
    cycle per skipped beat; the index-only decoder gives one index per cycle."""
    p = FocusParams(tokens=1024, lanes=4, word_bits=32)
    mask = np.zeros(1024, bool)
    mask[100:150] = mask[600:650] = True
    words, nbits = golden.encode_offsets(mask, None, 32)
    job = ([int(w) for w in words], nbits, 1024)
    quick = run_jobs(OffsetDecoder(p, mask=False), INDEX_PORTS, [decoder_job(*job)])[0]
    full = run_decoder_jobs(p, [job])[0]
    assert [b["index"] for b in quick["idx_stream"]] == np.flatnonzero(mask).tolist()
    assert quick["cycles"] <= max(len(words), 100) + 8
    assert full["cycles"] >= 1024 // 4
