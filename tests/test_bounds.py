"""rtl.lib.bounds: the folded compares equal Python's ``>`` and ``<=`` for every value of narrow
widths and every bound around them, and are constants exactly where the width decides them."""

import pytest
from amaranth.hdl import Const, Module, Signal, signed
from amaranth.sim import Simulator

from rtl.lib.bounds import above, at_most, outside_1_to


@pytest.mark.parametrize("width", [1, 2, 3])
def test_compares_equal_python_for_every_value(width):
    value = Signal(width)
    bounds = range(-2, 2 ** width + 2)
    funcs = {f.__name__: f for f in (above, at_most, outside_1_to)}
    want = {"above": lambda v, b: v > b, "at_most": lambda v, b: v <= b,
            "outside_1_to": lambda v, b: not 1 <= v <= b}
    outs = {(name, b): Signal(name=f"{name}_{b + 2}") for name in funcs for b in bounds}
    m = Module()
    m.d.comb += [out.eq(funcs[name](value, b)) for (name, b), out in outs.items()]
    sim = Simulator(m)
    seen = []

    async def check(ctx):
        for v in range(2 ** width):
            ctx.set(value, v)
            for (name, b), out in outs.items():
                assert ctx.get(out) == want[name](v, b), (name, v, b)
                seen.append(name)

    sim.add_testbench(check)
    sim.run()
    assert len(seen) == 2 ** width * len(outs)


@pytest.mark.parametrize("width", [1, 4])
def test_constant_exactly_where_the_width_decides(width):
    value = Signal(width)
    top = 2 ** width - 1
    for bound in range(-1, top + 2):
        decided = bound < 0 or bound >= top
        assert isinstance(above(value, bound), Const) == decided, bound
        assert isinstance(at_most(value, bound), Const) == decided, bound
    assert above(value, top).value == 0 and at_most(value, top).value == 1
    assert above(value, -1).value == 1 and at_most(value, -1).value == 0


def test_signed_value_refused():
    with pytest.raises(TypeError, match="unsigned"):
        above(Signal(signed(4)), 3)
