"""``focus-rtl estimate`` (sim/estimate.py): the per-job cost it uses equals the RTL's cycles, the
keep schedule and trace parsing, the per-layer bookkeeping, and the command line."""

import json

import numpy as np
import pytest

import sim
from focus_rtl.cli import main
from rtl.flow.cli_args import BadArgs
from rtl.params import FocusParams
from sim.estimate import (
    QWEN2_7B,
    estimate,
    gemm_job_cycles,
    layer_gemms,
    parse_schedule,
    read_trace,
)


def uniform_job(rng, rows, chunks, dim, tile, sparsity):
    """Maps with exactly round(m * (1 - sparsity)) unique vectors per row tile and chunk."""
    maps = np.zeros((rows, chunks), np.int64)
    uniques = []
    for c in range(chunks):
        count = 0
        for start in range(0, rows, tile):
            m = min(tile, rows - start)
            p = max(1, round(m * (1 - sparsity)))
            maps[start:start + p, c] = count + np.arange(p)
            maps[start + p:start + m, c] = count + rng.integers(0, p, m - p)
            count += p
        uniques.append(rng.integers(-128, 128, (count, dim)))
    return uniques, maps


@pytest.mark.parametrize("rows,k,n,sparsity,scatter_rows", [(19, 8, 6, 0.5, 2), (16, 12, 4, 0.0, 1),
                                                            (13, 4, 9, 0.8, 3)])
def test_job_cost_is_the_rtl_cycles(rows, k, n, sparsity, scatter_rows):
    """The estimator's cost of a job is what the RTL takes for such a job (Amaranth, no stalls)."""
    p = FocusParams(dim=4, tile=8, scatter_rows=scatter_rows)
    rng = np.random.default_rng(rows)
    uniques, maps = uniform_job(rng, rows, k // 4, 4, 8, sparsity)
    stats = {}
    sim.focus_gemm(uniques, maps, rng.integers(-128, 128, (k, n)), params=p, stats=stats)
    assert stats["cycles"] == gemm_job_cycles(rows, k, n, sparsity, p)


def test_parse_schedule():
    keeps = parse_schedule("3:0.4,6:0.3", 8)
    assert keeps[:3] == [(1.0, 1.0)] * 3
    assert keeps[3] == (1.0, 0.4) and keeps[4] == (0.4, 0.4) and keeps[6] == (0.4, 0.3)
    assert keeps[7] == (0.3, 0.3)
    assert parse_schedule("", 2) == [(1.0, 1.0)] * 2
    for bad in ("3=0.4", "9:0.5", "2:1.5", "2:0"):
        with pytest.raises(BadArgs, match="--keep-schedule item"):
            parse_schedule(bad, 8)


def test_read_trace(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("layer,keep,sparsity\n0,0.5,0.25\n3,,0.4\n")
    assert read_trace(path, 4) == {0: {"keep": 0.5, "sparsity": 0.25}, 3: {"sparsity": 0.4}}
    path = tmp_path / "t.json"
    path.write_text(json.dumps([{"layer": 1, "keep": 0.2}]))
    assert read_trace(path, 4) == {1: {"keep": 0.2}}
    path.write_text(json.dumps([{"layer": 9, "keep": 0.2}]))
    with pytest.raises(BadArgs, match=r"layer 9 is not in \[0, 3\]"):
        read_trace(path, 4)
    path.write_text(json.dumps([{"layer": 1, "sparsity": 1.0}]))
    with pytest.raises(BadArgs, match=r"sparsity in \[0, 1\)"):
        read_trace(path, 4)


TINY = {"name": "tiny", "d": 64, "heads": 2, "head_dim": 32, "layers": 3, "ffn": 96, "kv": 32,
        "tokens": 40}


def test_estimate_bookkeeping():
    """No pruning and no sparsity: the three columns agree; sparsity only lowers Focus; the dense
    column is the layer's jobs at full length; a layer's FFN uses the kept tokens after its
    pruning point."""
    p = FocusParams(dim=8, tile=16, scatter_rows=2)
    flat = estimate(TINY, p, [(1.0, 1.0)] * 3, [0.0] * 3)
    assert all(r["dense"] == r["sec"] == r["focus"] for r in flat)
    dense = sum(w * gemm_job_cycles(r, k, n, 0.0, p)
                for _, r, k, n, _, w in layer_gemms(TINY, 40, 40, 0.0))
    assert flat[0]["dense"] == dense
    rows = estimate(TINY, p, [(1.0, 1.0), (1.0, 0.5), (0.5, 0.5)], [0.5] * 3)
    assert (rows[1]["rows_attn"], rows[1]["rows_ffn"], rows[2]["rows_attn"]) == (40, 20, 20)
    assert rows[0]["sec"] == rows[0]["dense"] > rows[0]["focus"]
    assert rows[0]["dense"] > rows[1]["sec"] > rows[2]["sec"]
    assert [name for name, *_ in layer_gemms(TINY, 4, 4, 0.1)] == [
        "q_proj", "k_proj", "v_proj", "qk", "sv", "o_proj", "gate_proj", "up_proj", "down_proj"]
    assert [name for name, *_ in layer_gemms(TINY, 4, 4, 0.1, attention=False)][3] == "o_proj"


def test_command_line(tmp_path, capsys):
    out = tmp_path / "e.json"
    assert main(["estimate", "--set", "scatter_rows=1", "--sparsity", "0.5", "--json",
                 str(out)]) == 0
    text = capsys.readouterr().out
    assert "Speedup over the dense array: Focus" in text and "| 27 |" in text
    record = json.loads(out.read_text())
    assert len(record["rows"]) == QWEN2_7B["layers"] and record["params"]["scatter_rows"] == 1
    assert record["total"]["focus"] < record["total"]["sec"] < record["total"]["dense"]
    assert main(["estimate", "--sparsity", "1.5"]) == 2
    assert "focus-rtl: error: --sparsity 1.5: it must be in [0, 1)" in capsys.readouterr().err
    assert main(["estimate", "--keep-schedule", "40:0.1"]) == 2
    assert main(["estimate", "--set", "dim=0"]) == 2
