"""The map decoder's emitted Verilog under cocotb (slow tier; style R8): golden's map codes and
corrupted copies (``sim/tb/map_decoder.py``), without stalls and with 30 % input idles and output
back-pressure, a stream monitor on every port; each job ends in golden's map or, where golden
raises, in the error flag."""

import pytest

from rtl.params import FocusParams
from sim.runner import run_cocotb

pytestmark = pytest.mark.cocotb

CASES = [("icarus", FocusParams(dim=4, window=16, tile=24, layers=6, word_bits=8)),
         ("verilator", FocusParams(dim=4, window=16, tile=24, layers=6, word_bits=32))]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-w{c[1].word_bits}")
def test_map_decoder_regression(case, require_simulator):
    simulator, p = case
    require_simulator(simulator)
    run_cocotb("map_decoder", p, test_module="sim.tb.map_decoder", simulator=simulator,
               case="main", testcase="regression")
