# amaranth: UnusedElaboratable=no
"""Every scheme of the offset code (spec 3.3: kept or dropped set, Exp-Golomb or Rice, orders 0..7,
and the adaptive choice) through the RTL encoder and then both RTL decoders (with the mask and
index-only), under the four stall patterns, against golden: the encoder's words are golden's,
and both decoders give back the mask and its kept indices. Also for an encoder built with
``offset_schemes = "kept-exp-golomb"`` (its 8 schemes and its adaptive choice), whose codes the
same decoders read."""

import numpy as np
import pytest
from helpers import OFFSET_SHAPES

from golden.offsets import SCHEME_SETS, decode_offsets, scheme_bits
from rtl.sec.offset_decoder import OffsetDecoder
from sim.offsets import (
    DECODER_PORTS,
    checked_code,
    decoder_job,
    decoder_result,
    random_mask,
    run_encoder_jobs,
    run_jobs,
)
from sim.streams import stall_patterns

P = OFFSET_SHAPES[1]                    # tokens 64, lanes 4, word_bits 16
INDEX_PORTS = (("cfg_stream", "i_stream"), ("idx_stream",))
ENC_STALLS = stall_patterns(("cfg_stream", "i_stream"), ("o_stream",))
DEC_STALLS = stall_patterns(("cfg_stream", "i_stream"), ("o_stream", "idx_stream"))


def scheme_jobs(seed, schemes="all"):
    """For each scheme of ``SCHEME_SETS[schemes]`` (32, or the 8 kept-set Exp-Golomb ones) and
    the adaptive one, two masks it can code (a random one and, in turn, empty, full, one token,
    or dense/sparse), M from 1 to tokens."""
    rng = np.random.default_rng(seed)
    jobs = []
    specials = [np.zeros(P.tokens, bool), np.ones(P.tokens, bool), np.eye(1, 37, 36, bool)[0],
                np.arange(P.tokens) % 7 != 0, np.arange(50) % 9 == 0]
    for k, scheme in enumerate([None, *SCHEME_SETS[schemes]]):
        for mask in (random_mask(int(rng.integers(1, P.tokens + 1)), rng),
                     specials[k % len(specials)]):
            if scheme is not None and scheme_bits(mask)[scheme] < 0:
                mask = np.arange(mask.size) % 2 == 0     # a Rice quotient too long: alternate
            jobs.append((mask, scheme))
    return jobs


@pytest.mark.parametrize("schemes", sorted(SCHEME_SETS))
@pytest.mark.parametrize("pattern", sorted(ENC_STALLS))
def test_every_scheme_round_trips_through_the_rtl(pattern, schemes):
    jobs = scheme_jobs(seed=len(pattern), schemes=schemes)
    encoder = P.replace(offset_schemes=schemes)
    encoded = run_encoder_jobs(encoder, jobs, stalls=ENC_STALLS[pattern], seed=3)
    codes = []
    for n, ((mask, scheme), result) in enumerate(zip(jobs, encoded, strict=True)):
        words, nbits = checked_code(n, mask, scheme, result, encoder)
        head = int(words[0]) >> (P.word_bits - 5)
        if scheme is not None:
            assert (head >> 1 & 1, head & 1, head >> 2) == tuple(scheme)
        codes.append(([int(w) for w in words], nbits, mask.size))
    payloads = [decoder_job(*code) for code in codes]
    full = run_jobs(OffsetDecoder(P), DECODER_PORTS, payloads, stalls=DEC_STALLS[pattern],
                    seed=4)
    index_stalls = DEC_STALLS[pattern]
    if isinstance(index_stalls, dict):
        index_stalls = {k: v for k, v in index_stalls.items() if k != "o_stream"}
    quick = run_jobs(OffsetDecoder(P, mask=False), INDEX_PORTS, payloads, stalls=index_stalls,
                     seed=5)
    for (mask, scheme), code, a, b in zip(jobs, codes, full, quick, strict=True):
        assert np.array_equal(decode_offsets(*code, P.word_bits), mask)
        got, indices = decoder_result(a, mask.size, P.lanes)
        assert np.array_equal(got, mask), scheme
        assert indices.tolist() == np.flatnonzero(mask).tolist()
        assert not b["error"], scheme
        beats = b["idx_stream"]
        assert [x["index"] for x in beats] == np.flatnonzero(mask).tolist(), scheme
        assert [x["last"] for x in beats] == [0] * (len(beats) - 1) + [1] * bool(beats)
