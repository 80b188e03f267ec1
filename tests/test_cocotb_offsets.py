"""The offset encoder's and decoder's emitted Verilog under cocotb (slow tier; style R8).

Each (block, simulator, parameters) builds once in ``build/cocotb/<block>/<simulator>/<tag>/main``
(see :mod:`sim.runner`); the regressions and the ``sim`` API calls of one netlist share it. The
regressions (see ``sim/tb/offsets.py``) run without stalls and with 30 % input idles and output
back-pressure, with stream monitors on every port:

- encoder: 120 edge and random masks (M 1..tokens, densities 0..1, long gaps, every fixed scheme
  and adaptive) plus the H.264 ue(v) table, checked against golden word by word; also built with
  ``offset_schemes = "kept-exp-golomb"`` (its 8 schemes, against golden's restricted choice);
- decoder: 120 valid codes and 300 random and mutated streams, each ending in golden's mask or,
  where golden raises, in the error flag, within the stated cycle bound.

Icarus runs word_bits 8, 16 and 32; Verilator, whose C++ build costs about 13 s of CPU per
netlist, runs the encoder at word_bits 8 and the decoder at 32 (the budget of ``make test``).
"""

import re

import numpy as np
import pytest

import golden
import sim
from rtl.params import FocusParams
from sim.runner import run_cocotb

pytestmark = pytest.mark.cocotb

W8 = FocusParams(tokens=64, word_bits=8)            # codes up to 13 bits: longer than a word
W16 = FocusParams(tokens=256, lanes=8, word_bits=16)  # codes up to 17 bits: longer than a word
W32 = FocusParams(tokens=64, word_bits=32)
#: The iCEBreaker's encoder: the 8 kept-set Exp-Golomb schemes only.
W16_KEG = W16.replace(offset_schemes="kept-exp-golomb")

ENCODER_CASES = [("icarus", W8), ("icarus", W16), ("icarus", W32), ("verilator", W8),
                 ("icarus", W16_KEG)]
DECODER_CASES = [("icarus", W8), ("icarus", W16), ("icarus", W32), ("verilator", W32)]


def case_id(case):
    simulator, p = case
    narrow = "" if p.offset_schemes == "all" else "-keg"
    return f"{simulator}-w{p.word_bits}-M{p.tokens}-a{p.lanes}{narrow}"


@pytest.mark.parametrize("case", ENCODER_CASES, ids=case_id)
def test_encoder_regression(case, require_simulator):
    simulator, p = case
    require_simulator(simulator)
    run_cocotb("offset_encoder", p, test_module="sim.tb.offsets", simulator=simulator,
               case="main", testcase="encoder_regression")


@pytest.mark.parametrize("case", DECODER_CASES, ids=case_id)
def test_decoder_regression(case, require_simulator):
    simulator, p = case
    require_simulator(simulator)
    extra = {"FOCUS_JOBS": "60"} if p is W16 else {}    # its M up to 256 makes jobs long
    run_cocotb("offset_decoder", p, test_module="sim.tb.offsets", simulator=simulator,
               case="main", testcase="decoder_regression", extra_env=extra)


@pytest.mark.parametrize("simulator", ["icarus", "verilator"])
def test_sim_api_matches_golden_and_amaranth(simulator, require_simulator):
    """``sim.encode_offsets``/``sim.decode_offsets`` on a simulator equal golden, and give the
    same cycle counts as the Amaranth simulator for the same stall seed; a malformed code raises
    ``ValueError`` as in golden."""
    require_simulator(simulator)
    enc_p, dec_p = (W8, W32) if simulator == "verilator" else (W8, W8)
    rng = np.random.default_rng(17)
    mask = rng.random(60) < 0.3
    for order in (None, 0, 5):
        stats, reference = {}, {}
        words, nbits = sim.encode_offsets(mask, order, 8, params=enc_p, simulator=simulator,
                                          stalls=0.3, stats=stats, seed=2)
        want = golden.encode_offsets(mask, order, 8)
        assert np.array_equal(words, want[0]) and nbits == want[1]
        sim.encode_offsets(mask, order, 8, params=enc_p, stalls=0.3, stats=reference, seed=2)
        assert stats == reference

    wb = dec_p.word_bits
    words, nbits = golden.encode_offsets(mask, None, wb)
    stats, reference = {}, {}
    got = sim.decode_offsets(words, nbits, 60, wb, params=dec_p, simulator=simulator,
                             stalls=0.3, stats=stats, seed=3)
    assert got.tolist() == mask.tolist()
    sim.decode_offsets(words, nbits, 60, wb, params=dec_p, stalls=0.3, stats=reference, seed=3)
    assert stats == reference
    with pytest.raises(ValueError) as want:
        golden.decode_offsets(words, nbits + 1, 60, wb)
    with pytest.raises(ValueError) as got:
        sim.decode_offsets(words, nbits + 1, 60, wb, params=dec_p, simulator=simulator)
    assert str(got.value) == str(want.value)
    assert re.search(r"^malformed offset code: .*\(RTL decoder cause "
                     r"(TRUNCATED|TRAILING|SHORT)\)$", str(got.value.__cause__))
