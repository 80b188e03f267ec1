# amaranth: UnusedElaboratable=no
"""Flows as tasks: the result cache (a rerun only runs what changed), grids of several fields,
the Pareto front, the reference-job cycles, and a small sweep on a two-worker Dask LocalCluster
that must give the serial result."""

import json
import shutil

import pytest

from focus_rtl import cli
from rtl.flow import dist, toolchain
from rtl.flow.blocks import BLOCKS
from rtl.flow.cycles import job_cycles
from rtl.flow.pareto import pareto_markdown, plot_pareto
from rtl.flow.synth import grid_points, run_grid, sweep_markdown
from rtl.params import FocusParams

BLOCK = "similarity_comparator"
TINY = FocusParams(dim=2, elem_bits=4, theta_bits=2)


@pytest.fixture
def work(build_dir):
    return build_dir


def _fake_flows(monkeypatch, calls, status="ok"):
    """Replace the flows by a function of the parameters (no tool runs)."""
    def run_task(block, target, params, options):
        calls.append((block, target, params["dim"], params["lanes"]))
        area = 100.0 * params["dim"] + params["lanes"]
        period = params["dim"] / 1.0
        path = {"startpoint": "a_reg", "endpoint": "b_reg", "min_period_ns": period,
                "arrival_ns": period, "setup_ns": 0.0, "logic_levels": 1,
                "startpoint_kind": "input port clocked by clk",
                "endpoint_kind": "output port clocked by clk"}
        return {"status": status, "error": None, "seconds": {"total": 0.1},
                "area_um2": area, "cells": 1, "ff": 1, "area_lower_bound": False,
                "fmax_mhz": 1000.0 / period, "block": {"lut": int(area)}, "memories": [],
                "memory_bits": 0, "memories_dropped": [], "clock_period_ns": 10.0,
                "wns_ns": 10.0 - period, "timing_met": True, "critical_path": path,
                "paths": {}, "workdir": "w"}

    monkeypatch.setattr(dist, "run_task", run_task)
    from rtl.flow import synth
    monkeypatch.setattr(synth, "check_tools", lambda targets: None)
    monkeypatch.setattr(synth, "tool_versions", lambda targets: {})


def test_cache_reruns_only_what_changed(work, monkeypatch):
    calls = []
    _fake_flows(monkeypatch, calls)
    cache = work / "cache"
    kwargs = dict(progress=None, work_root=work, cache=cache, executor="threads")
    first = run_grid(TINY, [("dim", ["2", "3"])], [BLOCK], ["osu018"], **kwargs)
    assert len(calls) == 2 and first["cache"]["misses"] == 2 and first["cache"]["hits"] == 0
    lines = []
    again = run_grid(TINY, [("dim", ["2", "3", "4"])], [BLOCK], ["osu018"],
                     **{**kwargs, "progress": lines.append})
    assert calls[2:] == [(BLOCK, "osu018", 4, 4)]          # only the new point ran
    assert again["cache"] == {"dir": again["cache"]["dir"], "hits": 2, "misses": 1}
    assert any("(dim=2): cached, ok" in line for line in lines)
    assert [r["results"][BLOCK]["osu018"] for r in again["runs"][:2]] == \
        [r["results"][BLOCK]["osu018"] for r in first["runs"]]
    # Another option that changes the flow (the DSP mode of an FPGA target) is another key.
    key = dist.ResultCache.key
    fp = dist.task_fingerprint
    options = {"dsp": "auto", "freq": {}}
    assert key(fp(BLOCK, "ice40", TINY, options)) != key(fp(BLOCK, "ice40", TINY,
                                                             {**options, "dsp": "off"}))
    assert key(fp(BLOCK, "ice40", TINY, options)) != key(fp(BLOCK, "ice40", TINY,
                                                             {**options, "freq": {"ice40": 1}}))
    assert key(fp(BLOCK, "generic", TINY, options)) == key(fp(BLOCK, "generic", TINY,
                                                               {**options, "dsp": "off"}))
    # Several nextpnr seeds are another result; one seed is the key of before the option.
    assert key(fp(BLOCK, "ecp5", TINY, options)) == key(fp(BLOCK, "ecp5", TINY,
                                                            {**options, "seeds": 1}))
    assert key(fp(BLOCK, "ecp5", TINY, options)) != key(fp(BLOCK, "ecp5", TINY,
                                                            {**options, "seeds": 3}))
    assert key(fp(BLOCK, "osu018", TINY, options)) == key(fp(BLOCK, "osu018", TINY,
                                                              {**options, "seeds": 3}))
    assert fp(BLOCK, "generic", TINY, options)["flow"] == dist.flow_digest("generic")
    # The FPGA flows do not depend on the OpenSTA code, the STA flow does.
    assert dist.flow_digest("ice40") == dist.flow_digest("ecp5") != dist.flow_digest(
        "osu018-sta")


def test_flow_digest_follows_the_flow_files_not_the_emitter(tmp_path, monkeypatch):
    """An edit to a flow file changes its targets' digest; an edit to the emitter does not (its
    part in a result is the emitted Verilog, in the design digest)."""
    shutil.copytree(toolchain.SOURCE_ROOT / "rtl" / "flow", tmp_path / "rtl" / "flow")
    monkeypatch.setattr(toolchain, "SOURCE_ROOT", tmp_path)
    digest = dist.flow_digest.__wrapped__
    before = {target: digest(target) for target in ("ecp5", "osu018-sta")}
    with open(tmp_path / "rtl" / "flow" / "emit.py", "a") as f:
        f.write("# an edit\n")
    assert {target: digest(target) for target in before} == before
    with open(tmp_path / "rtl" / "flow" / "harness.py", "a") as f:
        f.write("# an edit\n")
    assert digest("ecp5") != before["ecp5"] and digest("osu018-sta") == before["osu018-sta"]


def test_design_digest_follows_the_verilog(monkeypatch):
    """The key names the block's Verilog: the same parameters give the same digest (emission is
    deterministic), another parameter or another block another one, and a change to one block's
    logic (here the pair scorer's) changes the digest of that block and of the blocks that
    contain it (the block matcher), not the others."""
    import hashlib

    from amaranth.hdl import Signal

    from rtl.flow.emit import emit_block
    from rtl.sic.dot_scorer import DotScorer

    a = dist.design_digest(BLOCK, TINY)
    assert a == hashlib.sha256(emit_block(BLOCK, TINY).encode()).hexdigest()
    assert a == dist.design_digest(BLOCK, FocusParams(dim=2, elem_bits=4, theta_bits=2))
    assert a != dist.design_digest(BLOCK, TINY.with_overrides(["elem_bits=5"]))
    assert a != dist.design_digest("topk_selector", TINY)
    before = {b: dist.design_digest(b, TINY) for b in ("dot_scorer", "block_matcher",
                                                       "topk_selector")}

    elaborate = DotScorer.elaborate

    def edited(self, platform):
        m = elaborate(self, platform)
        extra = Signal(3, name="edited")
        m.d.sync += extra.eq(extra + 1)
        return m

    monkeypatch.setattr(DotScorer, "elaborate", edited)
    dist._design_digest.cache_clear()
    try:
        assert dist.design_digest("dot_scorer", TINY) != before["dot_scorer"]
        assert dist.design_digest("block_matcher", TINY) != before["block_matcher"]
        assert dist.design_digest("topk_selector", TINY) == before["topk_selector"]
    finally:
        dist._design_digest.cache_clear()


def test_record_file_moves_the_cache_to_another_machine(work, monkeypatch):
    """A record file written beside one cache serves a run with an empty cache: nothing reruns.
    Each new result is in the file as soon as its flow ends, and pruning drops the results that
    a flow of the run replaced (another design), not those of flows the run left out."""
    calls = []
    _fake_flows(monkeypatch, calls)
    record = work / "flows.json"
    kwargs = dict(progress=None, work_root=work, executor="threads", cycles=False)
    first = dist.ResultCache(work / "cache-a", record=record)
    run_grid(TINY, [("dim", ["2", "3"])], [BLOCK], ["osu018"], cache=first, **kwargs)
    assert len(calls) == 2 and len(json.loads(record.read_text())) == 2   # before any pruning
    first.save_record(prune=True)

    elsewhere = dist.ResultCache(work / "cache-b", record=record)
    again = run_grid(TINY, [("dim", ["3", "4"])], [BLOCK], ["osu018"], cache=elsewhere,
                     **kwargs)
    assert calls[2:] == [(BLOCK, "osu018", 4, 4)]           # dim=3 came from the file
    assert again["cache"]["hits"] == 1 and again["cache"]["record"].endswith("flows.json")
    assert len(json.loads(record.read_text())) == 3
    elsewhere.save_record(prune=True)
    assert len(json.loads(record.read_text())) == 3          # dim=2 was not run, not replaced

    # A flow taken from the cache directory joins a new record too.
    other = work / "other.json"
    from_dir = dist.ResultCache(work / "cache-a", record=other)
    run_grid(TINY, [("dim", ["2"])], [BLOCK], ["osu018"], cache=from_dir, **kwargs)
    from_dir.save_record(prune=True)
    assert len(calls) == 3 and list(json.loads(other.read_text())) == [
        key for key, entry in json.loads(record.read_text()).items()
        if entry["fingerprint"]["params"]["dim"] == 2]

    monkeypatch.setattr(dist, "design_digest", lambda block, params: "an edited design")
    edited = dist.ResultCache(work / "cache-b", record=record)
    run_grid(TINY, [("dim", ["3"])], [BLOCK], ["osu018"], cache=edited, **kwargs)
    assert calls[3:] == [(BLOCK, "osu018", 3, 4)]
    assert len(json.loads(record.read_text())) == 4          # before pruning: old and new dim=3
    edited.save_record(prune=True)
    kept = json.loads(record.read_text())
    designs = sorted((entry["fingerprint"]["params"]["dim"], entry["fingerprint"]["design"])
                     for entry in kept.values())
    assert [dim for dim, _ in designs] == [2, 3, 4] and designs[1][1] == "an edited design"
    assert designs[0][1] != "an edited design"
    assert all(key == dist.ResultCache.key(entry["fingerprint"]) for key, entry in kept.items())
    assert record.read_text().count("\n") == 3 + 2          # one flow per line, and the braces


def test_record_needs_the_cache(capsys):
    assert cli.main(["synth", "--no-cache", "--record", "build/x.json"]) == 2
    assert "--record needs the cache" in capsys.readouterr().err


def test_uncacheable_results_are_not_kept(work, monkeypatch):
    calls = []
    _fake_flows(monkeypatch, calls, status="timeout")
    for _ in range(2):
        run_grid(TINY, [("dim", ["2"])], [BLOCK], ["osu018"], progress=None, work_root=work,
                 cache=work / "cache", executor="threads", cycles=False)
    assert len(calls) == 2


def test_grid_points():
    points = grid_points(TINY, [("comparators", ["1", "2"]), ("lanes", ["2", "4"])])
    assert [point for point, _ in points] == [
        {"comparators": "1", "lanes": "2"}, {"comparators": "1", "lanes": "4"},
        {"comparators": "2", "lanes": "2"}, {"comparators": "2", "lanes": "4"}]
    assert points[3][1].comparators == 2 and points[3][1].lanes == 4
    assert len(grid_points(TINY, [("dim", ["2", "0x2", "3"])])) == 2     # same params once
    with pytest.raises(ValueError, match="swept twice"):
        grid_points(TINY, [("dim", ["2"]), ("dim", ["3"])])
    with pytest.raises(ValueError, match="dim"):
        grid_points(TINY, [("dim", ["x"])])


def test_grid_report_and_pareto(work, monkeypatch):
    calls = []
    _fake_flows(monkeypatch, calls)
    sweep = run_grid(TINY, [("dim", ["2", "4"]), ("lanes", ["1", "2"])], [BLOCK, "topk_selector"],
                     ["osu018-sta"], progress=None, work_root=work, executor="threads")
    assert sweep["fields"] == ["dim", "lanes"] and sweep["field"] == "dim,lanes"
    assert [run["value"] for run in sweep["runs"]] == [
        "dim=2,lanes=1", "dim=2,lanes=2", "dim=4,lanes=1", "dim=4,lanes=2"]
    assert sweep["runs"][0]["point"] == {"dim": 2, "lanes": 1}
    # topk: more lanes, fewer cycles; more dim, more area and a lower (fake) Fmax.
    front = sweep["pareto"]
    assert front["area_metric"] == "logic um^2 (osu018-sta)"
    topk = {p["point"]: p for p in front["blocks"]["topk_selector"]}
    assert topk["dim=2,lanes=2"]["cycles"] < topk["dim=2,lanes=1"]["cycles"]
    assert topk["dim=2,lanes=1"]["optimal"] and topk["dim=2,lanes=2"]["optimal"]
    assert not topk["dim=4,lanes=1"]["optimal"] and not topk["dim=4,lanes=2"]["optimal"]
    # The comparator's cycles do not depend on lanes: lanes=1 (smaller) dominates lanes=2.
    comparator = {p["point"]: p["optimal"] for p in front["blocks"][BLOCK]}
    assert comparator == {"dim=2,lanes=1": True, "dim=2,lanes=2": False,
                          "dim=4,lanes=1": False, "dim=4,lanes=2": False}
    text = sweep_markdown(sweep)
    assert text.startswith("# Synthesis grid over `dim,lanes`")
    assert "| dim=2,lanes=1 topk_selector | ok |" in text
    assert "### Pareto front (area, Fmax, cycles)" in text
    assert "| topk_selector | dim=2,lanes=2 |" in text
    assert pareto_markdown({"blocks": {}}) == []
    assert plot_pareto(sweep, work / "p.png").read_bytes()[:4] == b"\x89PNG"
    json.dumps(sweep)


def test_job_cycles():
    for params in (FocusParams(), FocusParams.paper(), FocusParams.board()):
        for block in BLOCKS:
            # The tile (not the unit) and the map-code blocks have no reference job or model.
            if block in ("focus_gemm", "block_matcher_map_code", "map_coder", "frame_stats",
                         "map_decoder", "focus_gemm_coded"):
                assert job_cycles(block, params) is None
                continue
            cycles = job_cycles(block, params)
            assert isinstance(cycles["cycles"], int) and cycles["cycles"] > 0, block
    assert job_cycles("systolic_array", FocusParams()) is None
    board = FocusParams.board()
    assert (job_cycles("block_matcher", board.replace(comparators=1))["cycles"]
            > job_cycles("block_matcher", board.replace(comparators=7))["cycles"])


def test_executor_choice(monkeypatch):
    assert dist.resolve_executor("threads") == "threads"
    with pytest.raises(ValueError, match="needs the dask executor"):
        dist.resolve_executor("threads", "tcp://x:1")
    monkeypatch.setattr(dist, "have_dask", lambda: False)
    assert dist.resolve_executor("auto") == "threads"
    with pytest.raises(ValueError, match="pip install 'focus-rtl\\[dist\\]'"):
        dist.resolve_executor("dask")


@pytest.mark.parametrize("args,error", [
    (["--quick"], "--quick goes with --qor"),
    (["--qor", "--preset", "board"], "--qor takes its presets itself"),
    (["--qor", "huge"], "unknown preset 'huge'"),
    (["--qor", "--sweep", "dim=2"], "do not go together"),
    (["--sweep", "dim=2", "--sweep", "dim=3"], "swept twice"),
    (["--sweep", "dim"], "is not of the form FIELD=V1,V2"),
    (["--scheduler", "tcp://x:1", "--executor", "threads"], "needs the dask executor"),
])
def test_cli_bad_arguments(capsys, args, error):
    assert cli.main(["synth", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("focus-rtl: error: ") and error in err


# ---- a real sweep on a two-worker LocalCluster ---------------------------------------------------

def _stable(result):
    """A result without what differs between two runs of the same flow."""
    return {k: v for k, v in result.items() if k not in ("seconds", "workdir")}


@pytest.mark.synth
@pytest.mark.slow
def test_dask_sweep_matches_serial(work):
    pytest.importorskip("distributed")
    axes = [("dim", ["2", "3"])]
    common = dict(progress=None, cache=None, jobs=2)
    serial = run_grid(TINY, axes, [BLOCK], ["generic"], executor="threads",
                      work_root=work / "serial", **common)
    lines = []
    spread = run_grid(TINY, axes, [BLOCK], ["generic"], executor="dask",
                      work_root=work / "dask", **{**common, "progress": lines.append})
    assert sum("queued on tcp://" in line for line in lines) == 2
    assert [r["point"] for r in spread["runs"]] == [r["point"] for r in serial["runs"]]
    for a, b in zip(serial["runs"], spread["runs"], strict=True):
        assert a["results"][BLOCK]["generic"]["status"] == "ok"
        assert _stable(a["results"][BLOCK]["generic"]) == _stable(b["results"][BLOCK]["generic"])
        assert a["cycles"] == b["cycles"]
    assert (work / "dask" / TINY.replace(dim=3).tag / BLOCK / "generic" / "stat.json").is_file()
