"""The GEMM speedup benchmark (sim/bench/gemm.py) in its quick setup: it writes the table, the
JSON and both plots; the measured cycles equal the model in every row; SEC alone gives a speedup
equal to the cycle ratio of the shorter job; the random control has no SIC sparsity."""

import json

from rtl.flow import toolchain
from sim.bench.gemm import PLOTS, SETUPS, main


def test_quick_bench(capsys):
    out = toolchain.BUILD_ROOT / "test-bench-gemm"
    assert main(["--quick", "-o", str(out)]) == 0
    for name in ("speedup.md", "results.json", *PLOTS):
        assert (out / name).stat().st_size > 0
    rows = json.loads((out / "results.json").read_text())["rows"]
    setup = SETUPS["quick"]
    assert len(rows) == (len(setup["keeps"]) * (1 + (len(setup["thetas"]) - 1)
                                                * len(setup["reprs"]))
                         + 2 * len(setup["sweep_keeps"]) + 2 * len(setup["control_keeps"]))
    for r in rows:
        assert r["cycles"] == r["model"] and r["dense"] == r["dense_model"]
        assert abs(r["speedup"] - r["dense"] / r["cycles"]) < 1e-12
        if r["theta"] is None:
            assert r["sparsity"] == 0.0 and r["error"] == 0.0
    sec = {r["keep"]: r["speedup"] for r in rows
           if r["theta"] is None and r["data"] == "photo" and r["scatter_rows"] == 2}
    assert sec[1.0] == 1.0 and sec[0.5] > 1.0
    assert all(r["sparsity"] == 0.0 for r in rows if r["data"] == "random")
    assert "| photo | 50% |" in capsys.readouterr().out
    (out / "speedup_keep.png").unlink()
    assert main(["--quick", "-o", str(out), "--replot"]) == 0
    assert (out / "speedup_keep.png").is_file()
