# amaranth: UnusedElaboratable=no
"""FocusUnit in the Amaranth simulator: whole jobs against golden.focus (random and a photograph,
D = 2V, under stalls, a stream-rule monitor on every stream port), every counter against what the
job should give, the register map's access rules, and the error paths (bad settings, token count
mismatches, bad commands), each followed by a good job."""

from types import SimpleNamespace

import numpy as np
import pytest
from amaranth.lib import fifo

import golden
import sim
from golden.cycles import (
    SIC_INPUT_LATENCY,
    block_match_target,
    encode_cycles,
    importance_cycles,
    sic_cycles,
    topk_cycles,
)
from rtl.params import FocusParams
from rtl.sec.offset_decoder import DecodeError
from rtl.sec.semantic_concentrator import SecError
from rtl.sic.block_matcher import matcher_latency, matcher_rounds
from rtl.top import sic_sequencer
from rtl.top.focus_unit import FocusUnit
from rtl.top.registers import (
    ERROR_SHIFT,
    FOCUS_ID,
    READABLE,
    SIC_SETTINGS,
    WRITABLE,
    Ctrl,
    ErrorFlag,
    Irq,
    Reg,
    Status,
)
from sim.block_match import decode_beats
from sim.focus import (
    focus_program,
    job_record,
    read_counters,
    run_program,
    sec_mode_word,
    sec_order_word,
    token_beats,
    wait_idle,
)
from sim.sec import mask_from_beats
from sim.streams import Stalls

SMALL = dict(tokens=48, lanes=4, dim=4, window=16, tile=32, layers=4)
P7 = FocusParams(**SMALL, comparators=7)
P1 = FocusParams(**SMALL, comparators=1)
F = 8


def cdiv(a, b):
    return -(-a // b)


def random_job(rng, p, M=None, D=None, keep=None):
    """Scores, tokens (prototypes with noise, some zero: many matches), settings."""
    M = M or int(rng.integers(p.lanes + 1, p.tokens + 1))
    R = int(rng.integers(1, 4))
    D = D or 2 * p.dim
    scores = rng.integers(0, int(rng.choice([4, 1000, 65535])), (R, M))
    protos = rng.integers(-120, 121, (int(rng.integers(1, 4)), D))
    tokens = protos[rng.integers(0, len(protos), M)] + rng.integers(-3, 4, (M, D))
    tokens[rng.random(M) < 0.1] = 0
    hs = int(rng.integers(1, 4))
    fs = int(rng.integers(hs, p.window - hs - 1))
    return dict(scores=scores, tokens=tokens,
                keep=int(rng.integers(0, M + 3)) if keep is None else keep,
                mode=str(rng.choice(["spatial", "temporal"])),
                order=None if rng.random() < 0.5 else int(rng.integers(0, 8)),
                frame_stride=fs, row_stride=hs,
                theta_q=int(rng.choice([golden.theta_q(0.9), golden.theta_q(0.5), 255])),
                representative=str(rng.choice(["first", "mean"])))


def expected_active(vectors, positions, fs, hs, tile):
    """Comparisons of a non-zero token with an existing non-zero candidate in its tile, counted
    directly from the spec (the matcher's ACTIVE comparator-cycles)."""
    offsets = [(c >> 2) * fs + ((c >> 1) & 1) * hs + (c & 1) for c in range(1, 8)]
    nonzero = np.any(np.asarray(vectors) != 0, axis=1)
    where, active = {}, 0
    for s, q in enumerate(positions):
        if nonzero[s]:
            for o in offsets:
                t = where.get(q - o) if o > 0 else None
                active += t is not None and t >= s - s % tile and bool(nonzero[t])
        where[q] = s
    return active


def golden_of(p, job):
    return golden.focus(job["scores"], job["tokens"], job["keep"], mode=job["mode"],
                        order=job["order"], word_bits=p.word_bits,
                        frame_stride=job["frame_stride"], row_stride=job["row_stride"],
                        theta_q=job["theta_q"], theta_bits=F, tile=p.tile, window=p.window,
                        representative=job["representative"], dim=p.dim)


def record_of(p, job):
    return job_record(p, job["scores"], job["tokens"], job["keep"], mode=job["mode"],
                      order=job["order"], frame_stride=job["frame_stride"],
                      row_stride=job["row_stride"], theta_q=job["theta_q"],
                      representative=job["representative"])


def check_job(p, job, rec, io, *, exact_spans=True):
    """The RTL's outputs and counters of one job (``rec`` from focus_program) against golden."""
    want_mask, want_words, want_nbits, want_maps, want_uniques = golden_of(p, job)
    mask = np.array(rec["kept_mask"], bool)
    assert mask.tolist() == want_mask.tolist()
    code = io.beats("code")[slice(*rec["code"])]
    assert [b["word"] for b in code] == [int(w) for w in want_words]
    assert code[-1]["last"] and not any(b["last"] for b in code[:-1])
    assert all(b["nbits"] == want_nbits for b in code)
    n = int(want_mask.sum())
    sec = rec["sec"]
    assert sec["KEPT"] == n
    assert sec["NBITS"] == want_nbits
    assert sec["ORDER"] == int(want_words[0]) >> (p.word_bits - 3)
    assert sec["CODE_WORDS"] == len(want_words)
    assert sec["STATUS"] == Status.CODE_VALID and sec["CAUSE"] == 0
    M, R = job["scores"].shape[1], job["scores"].shape[0]
    if exact_spans:
        # SEC_CYCLES: first score transfer to the later last mask/code transfer, as measured by
        # the stream monitors.
        t = io.transfers
        s0, m1, c1 = rec["scores_from"], rec["mask"][1], rec["code"][1]
        measured = max(t["mask"][m1 - 1], t["code"][c1 - 1]) - t["scores"][s0] + 1
        assert sec["SEC_CYCLES"] == measured
    columns = rec["columns"]
    assert len(columns) == len(want_uniques)
    rounds = matcher_rounds(p)
    for j, column in enumerate(columns):
        c = column["counters"]
        beats = io.beats("sic")[slice(*column["beats"])]
        mp, u = decode_beats(beats, p.dim, job["representative"] == "mean")
        assert mp.tolist() == want_maps[:, j].tolist(), f"column {j}"
        assert u.tolist() == want_uniques[j].tolist(), f"column {j}"
        assert c["UNIQUES"] == len(want_uniques[j])
        assert c["ACTIVE"] == expected_active(
            job["tokens"][mask][:, j * p.dim:(j + 1) * p.dim], np.flatnonzero(mask).tolist(),
            job["frame_stride"], job["row_stride"], p.tile), f"column {j}"
        assert c["ACTIVE"] + c["GATED"] == p.comparators * rounds * n
        assert c["CAUSE"] == 0
        assert c["SIC_TOKENS"] == n
        assert c["STATUS"] == Status.CODE_VALID
        if n and exact_spans:
            first = rec["tokens_from"][j]
            measured = io.transfers["sic"][column["beats"][1] - 1] - \
                io.transfers["tokens"][first] + 1
            assert c["SIC_CYCLES"] == measured, f"column {j}"
        if not n:
            assert not beats and c["SIC_CYCLES"] == 0
    return M, R, n


async def traced_program(io, p, job):
    """focus_program, also noting where the job's score and token transfers start."""
    s0 = len(io.transfers["scores"])
    t0 = len(io.transfers["tokens"])
    rec = await focus_program(io, p, job)
    rec["scores_from"] = s0
    n = sum(rec["kept_mask"])
    rec["tokens_from"] = [t0 + j * n for j in range(len(rec["columns"]))]
    return rec


def run_jobs(p, jobs, stalls=0.0, seed=0):
    async def program(io):
        return [await traced_program(io, p, record_of(p, job)) for job in jobs]
    return run_program(p, program, stalls=stalls, seed=seed)


# ---- whole jobs ----------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [P7, P1], ids=["c7", "c1"])
def test_random_jobs_under_stalls(p):
    """Six random jobs back to back (both modes, fixed and adaptive orders, both representatives,
    keep from 0 to beyond M), 30 % idles and back-pressure on every stream port: outputs equal
    golden, and every counter is what the job gives (cycle counters equal the spans the stream
    monitors measured)."""
    rng = np.random.default_rng(p.comparators)
    jobs = [random_job(rng, p, keep=k) for k in (None, 0, None, 100, None, 1)]
    records, io = run_jobs(p, jobs, stalls=0.3, seed=p.comparators)
    for job, rec in zip(jobs, records, strict=True):
        check_job(p, job, rec, io)


def test_long_backpressure():
    """Consumers that hold ``ready`` low for hundreds of cycles (longer than any buffer) on
    ``mask``, ``code`` and ``sic``: nothing is lost or repeated, the counters still match."""
    p = P7
    rng = np.random.default_rng(17)
    jobs = [random_job(rng, p, M=40, keep=20)]
    stalls = {"mask": Stalls(windows=[(60, 300)]), "code": Stalls(0.2, 1, windows=[(30, 200)]),
              "sic": Stalls(0.1, 2, windows=[(0, 900)]), "scores": 0.1, "tokens": 0.1}
    records, io = run_jobs(p, jobs, stalls=stalls)
    check_job(p, jobs[0], records[0], io)
    assert io.transfers["sic"][0] >= 900 and io.transfers["mask"][0] >= 360


def test_cycles_within_model_bounds():
    """Without stalls: SEC_CYCLES between the input bound and the blocks' models summed (plus a
    small hand-over allowance), SIC_CYCLES equal to golden.cycles.sic_cycles (the
    index-only decoder never holds the matcher back) and within the spec's target, for 7 and 1
    comparators."""
    rng = np.random.default_rng(5)
    for p in (P7, P1):
        jobs = [random_job(rng, p, M=p.tokens, keep=k) for k in (30, 7)]
        for job in jobs:
            job["representative"] = "first"
        records, io = run_jobs(p, jobs)
        for job, rec in zip(jobs, records, strict=True):
            M, R, n = check_job(p, job, rec, io)
            mode, a = job["mode"], p.lanes
            words = rec["sec"]["CODE_WORDS"]
            model = (importance_cycles(R, M, a, mode) - cdiv(M, a)
                     + topk_cycles(M, job["keep"], a, p.score_bits, p.sorter)
                     + encode_cycles(M, n, rec["sec"]["NBITS"], a, p.word_bits))
            beats = R * cdiv(M, a) if mode == "spatial" else M * cdiv(R, a)
            assert beats + cdiv(M, a) <= rec["sec"]["SEC_CYCLES"] <= model + 16 + n, (
                rec["sec"]["SEC_CYCLES"], model)
            for column in rec["columns"]:
                c = column["counters"]["SIC_CYCLES"]
                assert c == sic_cycles(n, p.comparators), (c, n, words)
                assert c <= block_match_target(n, p.comparators)


def test_photo_two_columns_under_stalls():
    """A photograph panned into 3 frames of 4x4 patches (48 tokens of D = 8 = 2V); importance is a
    query patch's attention (fp16 bit patterns); keep 30; tiles of 24 tokens; 25 % stalls."""
    x, pos = golden.photo.photo_tokens(frames=3, grid=4, patch=8, dim=8)
    attention = golden.photo.photo_attention(frames=3, grid=4, patch=8, dim=8, queries=2, seed=3)
    scores = golden.scores_from_fp16(attention.astype(np.float16))
    p = FocusParams(**{**SMALL, "window": 32, "tile": 24}, comparators=7)
    args = dict(frame_stride=16, row_stride=4, theta_q=golden.theta_q(0.8), tile=24, window=32,
                dim=4, word_bits=32)
    stats = {}
    got = sim.focus(scores, x, 30, params=p, stalls=0.25, seed=9, stats=stats, **args)
    want = golden.focus(scores, x, 30, **args)
    for g, w in zip(got[:4], want[:4], strict=True):
        np.testing.assert_array_equal(g, w)
    for g, w in zip(got[4], want[4], strict=True):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype
    assert stats["kept"] == 30 and stats["nbits"] == want[2]
    assert stats["uniques"] == [len(u) for u in want[4]]
    assert stats["active"] + stats["gated"] == 2 * 7 * 30
    assert any(len(u) < 30 for u in want[4])            # the photo does have similar neighbours


def assert_same_result(got, want):
    """Every array of a ``(mask, words, nbits, maps, uniques)`` result equal, with its shape and
    dtype."""
    assert len(got) == len(want) == 5
    for g, w in zip([*got[:4], *got[4]], [*want[:4], *want[4]], strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
        np.testing.assert_array_equal(g, w)
    assert len(got[4]) == len(want[4])


@pytest.mark.parametrize("M, D", [(10, 8), (1, 4)], ids=["M10-D8", "M1-D4"])
def test_sim_focus_keeps_nothing(M, D):
    """keep = 0 is a valid job: SEC keeps no token, each SIC column sees none, and sim.focus
    returns golden's empty result (maps [0, D/V], D/V empty unique arrays of the tokens' dtype)
    instead of failing on the empty kept set."""
    rng = np.random.default_rng(M)
    job = random_job(rng, P7, M=M, D=D, keep=0)
    job["tokens"] = job["tokens"].astype(np.int16)
    args = dict(mode=job["mode"], order=job["order"], frame_stride=2, row_stride=1,
                theta_q=job["theta_q"], tile=P7.tile, window=P7.window,
                representative=job["representative"], dim=P7.dim)
    want = golden.focus(job["scores"], job["tokens"], 0, **args)
    assert want[3].shape == (0, D // P7.dim) and not want[0].any()
    stats = {}
    got = sim.focus(job["scores"], job["tokens"], 0, params=P7, stats=stats, **args)
    assert_same_result(got, want)
    assert stats["kept"] == 0 and stats["uniques"] == [0] * (D // P7.dim)
    assert_same_result(sim.focus(job["scores"], job["tokens"], 0, **args), want)


def test_sim_focus_with_the_papers_offset_code():
    """A unit built with ``offset_schemes = "kept-exp-golomb"`` (the paper preset's) gives
    ``golden.focus(..., schemes="kept-exp-golomb")``'s code. The job keeps 44 of 48 tokens, so
    with all 32 schemes the dropped set would be shorter: the two codes differ. sim.focus with
    mismatched ``schemes`` and a bad ``schemes`` raise golden's ``ValueError``."""
    rng = np.random.default_rng(44)
    scores = rng.integers(0, 1000, (3, 48))
    tokens = rng.integers(-4, 5, (48, 8))
    p = P1.replace(offset_schemes="kept-exp-golomb")
    args = dict(frame_stride=8, row_stride=2, theta_q=golden.theta_q(0.9), tile=p.tile,
                window=p.window, dim=p.dim)
    want = golden.focus(scores, tokens, 44, schemes="kept-exp-golomb", **args)
    assert want[2] != golden.focus(scores, tokens, 44, **args)[2]
    assert_same_result(sim.focus(scores, tokens, 44, schemes="kept-exp-golomb", params=p, **args),
                       want)
    with pytest.raises(ValueError, match=r"^params.offset_schemes = 'kept-exp-golomb' does not "
                                         r"match schemes = 'all'$"):
        sim.focus(scores, tokens, 44, params=p, **args)
    message = r"^schemes must be 'all' or 'kept-exp-golomb', not 'rice'$"
    for run in (golden.focus, sim.focus):
        with pytest.raises(ValueError, match=message):
            run(scores, tokens, 44, schemes="rice", **args)


def test_sim_focus_takes_the_most_negative_elements():
    """Tokens all at -128, the most negative 8-bit value (also their largest element), fit params
    with elem_bits = 8; sim.sic fits 8 bits to them too."""
    from sim.block_match import fit_params

    scores = np.random.default_rng(31).integers(0, 100, (2, 12))
    tokens = np.full((12, 8), -128, np.int8)
    args = dict(frame_stride=4, row_stride=1, theta_q=230, tile=P7.tile, window=P7.window,
                dim=P7.dim)
    assert_same_result(sim.focus(scores, tokens, 7, params=P7, **args),
                       golden.focus(scores, tokens, 7, **args))
    assert fit_params(tokens[:, :4]).elem_bits == 8


def test_sim_focus_rejects_like_golden():
    args = dict(frame_stride=2, row_stride=1, theta_q=200, window=16, tile=32, dim=4)
    with pytest.raises(ValueError, match=r"^tokens has 5 rows but scores has M = 6"):
        sim.focus(np.ones((2, 6), int), np.ones((5, 8), int), 3, **args)
    with pytest.raises(ValueError, match=r"^keep = -1 is out of range"):
        sim.focus(np.ones((2, 6), int), np.ones((6, 8), int), -1, **args)
    with pytest.raises(ValueError, match=r"must be less than window = 16"):
        sim.focus(np.ones((2, 6), int), np.ones((6, 8), int), 3, **{**args, "frame_stride": 14})
    with pytest.raises(ValueError, match=r"^M = 60 > tokens = 48"):
        sim.focus(np.ones((2, 60), int), np.ones((60, 8), int), 3, params=P7, **args)


def test_sim_focus_names_the_rtl_limits():
    """Jobs golden runs but the RTL cannot build: the error names the argument and the RTL's
    range."""
    scores, tokens = np.ones((2, 6), int), np.ones((6, 8), int)
    args = dict(frame_stride=0, row_stride=0, theta_q=200, window=16, tile=32, dim=4)
    for change, message in (({"window": 3}, r"^window = 3 is out of the RTL's range \[4, 4096\]"),
                            ({"tile": 70_000}, r"^tile = 70000 is out of the RTL's range"),
                            ({"dim": 300}, r"^dim = 300 is out of the RTL's range \[1, 256\]")):
        job = {**args, **change}
        wide = np.ones((6, 300), int) if "dim" in change else tokens
        golden.focus(scores, wide, 3, **job)
        with pytest.raises(ValueError, match=message):
            sim.focus(scores, wide, 3, **job)
    with pytest.raises(ValueError, match=r"^scores need 33 bits; at most 32 are supported"):
        sim.focus(scores << 32, tokens, 3, **args)


# ---- registers -----------------------------------------------------------------------------------

def errors_of(status):
    return ErrorFlag(status >> ERROR_SHIFT)


def test_register_access_rules():
    """ID; RW registers read back; write-only ones read 0; writes to RO and unmapped addresses
    are ignored and set BUS, reads of unmapped addresses return 0 and set BUS; CLEAR clears it;
    THETA_DATA out of range sets BUS; ``error`` follows the flags."""
    p = P7
    unmapped = [a for a in range(256) if a not in READABLE]
    read_only = sorted(READABLE - WRITABLE)

    async def program(io):
        dut = io.dut
        assert await io.read(Reg.ID) == FOCUS_ID
        assert await io.read(Reg.STATUS) == 0 and not io.get(dut.error)
        values = {}
        for n, reg in enumerate(sorted(WRITABLE - {Reg.CTRL, Reg.THETA_DATA, Reg.IRQ_STATUS})):
            value = (0x9E3779B9 * (n + 1)) & 0xFFFFFFFF
            await io.write(reg, value)
            values[reg] = value & {Reg.SEC_MODE: 1, Reg.SEC_ORDER: 15, Reg.SIC_REPR: 1,
                                   Reg.IRQ_ENABLE: 7}.get(reg, 0xFFFFFFFF)
        for reg, value in values.items():
            assert await io.read(reg) == value, reg.name
        assert await io.read(Reg.CTRL) == 0 and await io.read(Reg.THETA_DATA) == 0
        assert await io.read(Reg.STATUS) == 0
        # Writes to every read-only register: ignored, flagged.
        for reg in read_only:
            before = await io.read(reg)
            await io.write(reg, 0x12345678)
            status = await io.read(Reg.STATUS)
            assert errors_of(status) == ErrorFlag.BUS, reg.name
            assert io.get(dut.error)
            if reg != Reg.STATUS:
                assert await io.read(reg) == before, reg.name
            await io.write(Reg.CTRL, Ctrl.CLEAR)
            assert await io.read(Reg.STATUS) == 0 and not io.get(dut.error)
        # Unmapped addresses: writes ignored (nothing else changes), reads 0; both flagged.
        for addr in unmapped:
            await io.write(addr, 0xFFFFFFFF)
            assert errors_of(await io.read(Reg.STATUS)) == ErrorFlag.BUS, hex(addr)
            await io.write(Reg.CTRL, Ctrl.CLEAR)
            assert await io.read(addr) == 0, hex(addr)
            assert errors_of(await io.read(Reg.STATUS)) == ErrorFlag.BUS, hex(addr)
            await io.write(Reg.CTRL, Ctrl.CLEAR)
        for reg, value in values.items():
            assert await io.read(reg) == value, reg.name
        # A read and a write in the same cycle: the read sees the old value.
        old = values[Reg.SEC_R]
        assert await io.access(Reg.SEC_R, read=True, write=77) == old
        assert await io.read(Reg.SEC_R) == 77
        # Threshold table: entries >= layers and values >= 2**F are rejected.
        await io.write(Reg.THETA_ADDR, p.layers - 1)
        await io.write(Reg.THETA_DATA, 200)
        assert await io.read(Reg.THETA_ADDR) == p.layers
        assert await io.read(Reg.STATUS) == 0
        await io.write(Reg.THETA_DATA, 200)
        assert errors_of(await io.read(Reg.STATUS)) == ErrorFlag.BUS
        await io.write(Reg.CTRL, Ctrl.CLEAR)
        await io.write(Reg.THETA_ADDR, 0)
        await io.write(Reg.THETA_DATA, 1 << F)
        assert errors_of(await io.read(Reg.STATUS)) == ErrorFlag.BUS
        await io.write(Reg.CTRL, Ctrl.CLEAR)
        # Unmapped read data is 0 only in its own cycle; a read without r_en returns 0.
        await io.tick()
        assert io.get(dut.bus.r_data) == 0
        return True

    assert run_program(p, program)[0]


def test_commands_and_clear():
    """START_SIC with no code, both starts at once, a start during a job: ignored, COMMAND set;
    CLEAR zeroes counters and flags but keeps the code; a SIC job of a code with no kept token
    ends at once with no output."""
    p = P7
    rng = np.random.default_rng(3)
    job = random_job(rng, p, M=20, keep=5)
    empty = dict(job, keep=0)

    async def program(io):
        await io.write(Reg.CTRL, Ctrl.START_SIC)
        status = await io.read(Reg.STATUS)
        assert errors_of(status) == ErrorFlag.COMMAND and not status & 3
        await io.write(Reg.CTRL, Ctrl.START_SEC | Ctrl.START_SIC)
        assert not await io.read(Reg.STATUS) & 3
        await io.write(Reg.CTRL, Ctrl.CLEAR)
        rec = await traced_program(io, p, record_of(p, job))
        # A start while busy: SEC job running (no scores sent yet, so it waits).
        await io.write(Reg.CTRL, Ctrl.START_SEC)
        await io.write(Reg.CTRL, Ctrl.START_SIC)
        await io.write(Reg.CTRL, Ctrl.START_SEC)
        status = await io.read(Reg.STATUS)
        assert status & Status.SEC_BUSY and not status & Status.CODE_VALID
        assert io.get(io.dut.busy)
        assert errors_of(status) == ErrorFlag.COMMAND
        io.send("scores", record_of(p, job)["scores"])
        await io.wait_sent("scores")
        await wait_idle(io)
        before = await read_counters(io)
        assert not io.get(io.dut.busy)
        assert before["KEPT"] == 5 and before["SEC_CYCLES"] > 0
        await io.write(Reg.CTRL, Ctrl.CLEAR)
        after = await read_counters(io)
        assert after["STATUS"] == Status.CODE_VALID
        assert all(v == 0 for k, v in after.items() if k not in ("STATUS", "CODE_WORDS"))
        assert after["CODE_WORDS"] == before["CODE_WORDS"]
        # The code is still there: a SIC job runs on it.
        io.send("tokens", [{"vector": [1, 2, 3, 4], "last": int(i == 4)} for i in range(5)])
        await io.write(Reg.CTRL, Ctrl.START_SIC)
        await io.wait_sent("tokens")
        await wait_idle(io)
        assert (await read_counters(io))["SIC_TOKENS"] == 5
        sic_before = len(io.beats("sic"))
        rec_empty = await traced_program(io, p, record_of(p, empty))
        assert len(io.beats("sic")) == sic_before
        return rec, rec_empty

    (rec, rec_empty), io = run_program(p, program, stalls=0.2, seed=4)
    check_job(p, job, rec, io)
    check_job(p, empty, rec_empty, io)


def test_interrupts():
    """IRQ_STATUS records every job end and every raised error flag whether enabled or not; irq
    is high exactly while an enabled bit is set; a write of 1 clears a bit, of 0 leaves it;
    CTRL.CLEAR leaves IRQ_STATUS; an aborted job and a SIC start on a code that kept nothing
    end too; a second error of a flag already set raises ERROR again."""
    p = P7
    rng = np.random.default_rng(11)
    job = random_job(rng, p, M=20, keep=6)

    async def irq_state(io):
        return await io.read(Reg.IRQ_STATUS), io.get(io.dut.irq)

    async def sec_job(io, rec):
        await io.write(Reg.CTRL, Ctrl.START_SEC)
        assert io.get(io.dut.busy) and not io.get(io.dut.irq)
        io.send("scores", rec["scores"])
        await io.wait_sent("scores")
        await wait_idle(io)

    async def program(io):
        rec = record_of(p, job)
        assert await irq_state(io) == (0, 0) and await io.read(Reg.IRQ_ENABLE) == 0
        for reg, value in [(Reg.SEC_M, rec["M"]), (Reg.SEC_R, rec["R"]),
                           (Reg.SEC_KEEP, rec["keep"]), (Reg.THETA_ADDR, 0),
                           (Reg.THETA_DATA, rec["theta_q"]), (Reg.SIC_FRAME_STRIDE, 4),
                           (Reg.SIC_ROW_STRIDE, 1)]:
            await io.write(reg, value)
        # Every event enabled: an SEC job's end.
        await io.write(Reg.IRQ_ENABLE, Irq.SEC_DONE | Irq.SIC_DONE | Irq.ERROR)
        assert await io.read(Reg.IRQ_ENABLE) == 7
        await sec_job(io, rec)
        assert await irq_state(io) == (Irq.SEC_DONE, 1)
        await io.write(Reg.IRQ_STATUS, 0)                       # writing 0 clears nothing
        assert await irq_state(io) == (Irq.SEC_DONE, 1)
        await io.write(Reg.IRQ_STATUS, Irq.SEC_DONE)
        assert await irq_state(io) == (0, 0)
        assert errors_of(await io.read(Reg.STATUS)) == 0        # a W1C write is not a bus error
        # A SIC job's end.
        kept = np.asarray(rec["tokens"]).reshape(rec["M"], -1)[
            np.array(mask_of(io, rec["M"]), dtype=bool)]
        await io.write(Reg.CTRL, Ctrl.START_SIC)
        io.send("tokens", token_beats(kept, 0, p.dim))
        await io.wait_sent("tokens")
        await wait_idle(io)
        assert await irq_state(io) == (Irq.SIC_DONE, 1)
        await io.write(Reg.IRQ_STATUS, 7)
        # Masking: only ERROR enabled. A job's end is recorded, irq stays low.
        await io.write(Reg.IRQ_ENABLE, Irq.ERROR)
        await sec_job(io, rec)
        assert await irq_state(io) == (Irq.SEC_DONE, 0)
        await io.write(Reg.ID, 0)                               # a bus error
        assert await irq_state(io) == (Irq.SEC_DONE | Irq.ERROR, 1)
        await io.write(Reg.CTRL, Ctrl.CLEAR)                    # clears STATUS, not IRQ_STATUS
        assert await irq_state(io) == (Irq.SEC_DONE | Irq.ERROR, 1)
        await io.write(Reg.IRQ_STATUS, Irq.ERROR)
        assert await irq_state(io) == (Irq.SEC_DONE, 0)
        await io.write(Reg.IRQ_ENABLE, Irq.SEC_DONE)            # enabling a pending bit raises irq
        assert await irq_state(io) == (Irq.SEC_DONE, 1)
        await io.write(Reg.IRQ_ENABLE, 0)
        assert await irq_state(io) == (Irq.SEC_DONE, 0)
        await io.write(Reg.IRQ_STATUS, 7)
        # An error of a flag already set (BUS, not cleared) raises ERROR again.
        await io.write(Reg.IRQ_ENABLE, Irq.ERROR)
        await io.write(Reg.ID, 0)
        await io.write(Reg.IRQ_STATUS, Irq.ERROR)
        assert await irq_state(io) == (0, 0)
        await io.write(Reg.ID, 0)
        assert await irq_state(io) == (Irq.ERROR, 1)
        await io.write(Reg.CTRL, Ctrl.CLEAR)
        await io.write(Reg.IRQ_STATUS, 7)
        # An aborted SEC job (its scores never come): SEC_DONE and ERROR (ABORTED).
        await io.write(Reg.IRQ_ENABLE, Irq.SEC_DONE)
        await io.write(Reg.CTRL, Ctrl.START_SEC)
        await io.tick(5)
        assert await irq_state(io) == (0, 0)
        await io.write(Reg.CTRL, Ctrl.ABORT)
        await io.tick()             # ABORTED is raised with the write, the job ends a cycle later
        assert await irq_state(io) == (Irq.SEC_DONE | Irq.ERROR, 1)
        assert errors_of(await io.read(Reg.STATUS)) == ErrorFlag.ABORTED
        await io.write(Reg.CTRL, Ctrl.CLEAR)
        await io.write(Reg.IRQ_STATUS, 7)
        # A SIC start on a code that kept nothing ends at once; a refused start is only an error.
        await io.write(Reg.SEC_KEEP, 0)
        await sec_job(io, rec)
        await io.write(Reg.IRQ_STATUS, 7)
        await io.write(Reg.IRQ_ENABLE, Irq.SIC_DONE)
        await io.write(Reg.CTRL, Ctrl.START_SIC)
        await io.tick()             # the job ends in the cycle after the start, seen a cycle later
        assert await irq_state(io) == (Irq.SIC_DONE, 1)
        await io.write(Reg.IRQ_STATUS, 7)
        await io.write(Reg.CTRL, Ctrl.START_SEC | Ctrl.START_SIC)
        assert await irq_state(io) == (Irq.ERROR, 0)
        return True

    assert run_program(p, program, stalls=0.2, seed=6)[0]


def test_abort():
    """CTRL.ABORT: with nothing running it does nothing and sets no flag; a SIC job whose tokens
    never come and an SEC job whose scores stop halfway end at once (idle the next cycle,
    inputs not ready, ABORTED set, nothing emitted); the threshold table and the code survive
    the aborted SIC job (the same column then gives the same beats); ABORT with a start in the
    same write refuses the start (COMMAND); the next job equals golden."""
    p = P7
    rng = np.random.default_rng(21)
    first, second = random_job(rng, p, M=40, keep=12), random_job(rng, p, M=44, keep=9)

    async def program(io):
        dut = io.dut
        await io.write(Reg.CTRL, Ctrl.ABORT)
        assert await io.read(Reg.STATUS) == 0
        rec = await traced_program(io, p, record_of(p, first))
        column0 = io.beats("sic")[slice(*rec["columns"][0]["beats"])]
        # A SIC job whose tokens never come.
        await io.write(Reg.CTRL, Ctrl.START_SIC)
        await io.tick(40)
        assert (await io.read(Reg.STATUS)) & Status.SIC_BUSY
        sic_before = len(io.beats("sic"))
        await io.write(Reg.CTRL, Ctrl.ABORT)
        assert not io.get(dut.busy) and not io.get(dut.tokens.ready)
        status = await io.read(Reg.STATUS)
        assert errors_of(status) == ErrorFlag.ABORTED
        assert status & (Status.SIC_BUSY | Status.CODE_VALID) == Status.CODE_VALID
        assert len(io.beats("sic")) == sic_before
        await io.write(Reg.CTRL, Ctrl.CLEAR)
        # The same code and threshold table (not rewritten): column 0 again, same beats.
        kept = np.asarray(first["tokens"]).reshape(40, -1)[rec["kept_mask"]]
        io.send("tokens", token_beats(kept, 0, p.dim))
        await io.write(Reg.CTRL, Ctrl.START_SIC)
        await io.wait_sent("tokens")
        assert await wait_idle(io) == Status.CODE_VALID
        again = io.beats("sic")[sic_before:]
        # An SEC job whose scores stop halfway.
        job = record_of(p, second)
        for reg, value in [(Reg.SEC_M, job["M"]), (Reg.SEC_R, job["R"])]:
            await io.write(reg, value)
        mask_before, code_before = len(io.beats("mask")), len(io.beats("code"))
        await io.write(Reg.CTRL, Ctrl.START_SEC)
        io.send("scores", job["scores"][:len(job["scores"]) // 2])
        await io.wait_sent("scores")
        await io.tick(5)
        await io.write(Reg.CTRL, Ctrl.ABORT | Ctrl.START_SIC)
        assert not io.get(dut.busy) and not io.get(dut.scores.ready)
        status = await io.read(Reg.STATUS)
        assert errors_of(status) == ErrorFlag.ABORTED | ErrorFlag.COMMAND
        assert not status & (Status.SEC_BUSY | Status.SIC_BUSY | Status.CODE_VALID)
        assert (len(io.beats("mask")), len(io.beats("code"))) == (mask_before, code_before)
        await io.write(Reg.CTRL, Ctrl.CLEAR)
        return rec, column0, again, await traced_program(io, p, job)

    (rec, column0, again, rec2), io = run_program(p, program, stalls=0.2, seed=8)
    check_job(p, first, rec, io)
    assert again == column0 and column0
    check_job(p, second, rec2, io)


async def write_sec_settings(io, rec):
    """Writes the SEC settings registers of a job record (:func:`record_of`)."""
    settings = [(Reg.SEC_M, rec["M"]), (Reg.SEC_R, rec["R"]), (Reg.SEC_KEEP, rec["keep"]),
                (Reg.SEC_MODE, sec_mode_word(rec["mode"])),
                (Reg.SEC_ORDER, sec_order_word(rec["order"]))]
    for reg, value in settings:
        await io.write(reg, value)


def test_unit_without_sic():
    """``sic=False`` (the iCEBreaker's SEC-only unit): SEC jobs equal golden.sec under stalls,
    with the same counters; START_SIC is refused (COMMAND) even with a valid code; ``tokens``
    is never ready and nothing leaves on ``sic``; the SIC settings are unmapped (BUS); ABORT
    still ends an SEC job."""
    p = P7
    rng = np.random.default_rng(31)
    jobs = [random_job(rng, p, M=m, keep=k) for m, k in ((48, 12), (13, 13), (30, 0))]

    async def program(io):
        dut = io.dut
        results = []
        for job in jobs:
            rec = record_of(p, job)
            await write_sec_settings(io, rec)
            starts = len(io.beats("mask")), len(io.beats("code"))
            await io.write(Reg.CTRL, Ctrl.START_SEC)
            io.send("scores", rec["scores"])
            await io.wait_sent("scores")
            assert await wait_idle(io) == Status.CODE_VALID
            counters = await read_counters(io)
            results.append((io.beats("mask")[starts[0]:], io.beats("code")[starts[1]:], counters))
            await io.write(Reg.CTRL, Ctrl.START_SIC)
            status = await io.read(Reg.STATUS)
            assert errors_of(status) == ErrorFlag.COMMAND and not status & Status.SIC_BUSY
            await io.write(Reg.CTRL, Ctrl.CLEAR)
        for _ in range(20):
            assert not io.get(dut.tokens.ready)
            await io.tick()
        for reg in sorted(SIC_SETTINGS):                   # unmapped: BUS, on write and read
            await io.write(reg, 3)
            assert errors_of(await io.read(Reg.STATUS)) == ErrorFlag.BUS, reg.name
            await io.write(Reg.CTRL, Ctrl.CLEAR)
            assert await io.read(reg) == 0
            assert errors_of(await io.read(Reg.STATUS)) == ErrorFlag.BUS, reg.name
            await io.write(Reg.CTRL, Ctrl.CLEAR)
        await io.write(Reg.CTRL, Ctrl.START_SEC)
        await io.write(Reg.CTRL, Ctrl.ABORT)
        assert errors_of(await io.read(Reg.STATUS)) == ErrorFlag.ABORTED
        return results

    unit = FocusUnit(p, icg_cell=None, sic=False)
    assert not unit.has_sic and FocusUnit(p).has_sic
    assert unit.writable == WRITABLE - SIC_SETTINGS and FocusUnit(p).readable == READABLE
    results, io = run_program(p, program, stalls=0.2, seed=3, dut=unit)
    assert not io.beats("sic")
    for job, (mask_beats, code_beats, counters) in zip(jobs, results, strict=True):
        scores = np.asarray(job["scores"])
        mask, words, nbits = golden.sec(scores, job["keep"], mode=job["mode"],
                                        order=job["order"], word_bits=p.word_bits)
        assert np.array_equal(mask_from_beats(mask_beats, scores.shape[1], p.lanes), mask)
        assert [b["word"] for b in code_beats] == [int(w) for w in words]
        assert code_beats[-1]["last"] and code_beats[-1]["nbits"] == nbits
        assert counters["KEPT"] == mask.sum() and counters["NBITS"] == nbits
        assert counters["SIC_CYCLES"] == counters["UNIQUES"] == counters["SIC_TOKENS"] == 0


# One value per register and side in make test; the far values in the slow tier.
@pytest.mark.parametrize("setting, value", [
    (Reg.SEC_M, 0), (Reg.SEC_M, 49), pytest.param(Reg.SEC_M, 1 << 31, marks=pytest.mark.slow),
    (Reg.SEC_R, 0), pytest.param(Reg.SEC_R, 1 << 16, marks=pytest.mark.slow)])
def test_bad_sec_settings(setting, value):
    """SEC_CONFIG, cause ANALYZER, no output, stray score beats drained, idle; the next job is
    good."""
    p = P7
    rng = np.random.default_rng(value & 0xFF)
    good = random_job(rng, p, M=30)

    async def program(io):
        job = record_of(p, good)
        for reg, v in [(Reg.SEC_M, 30), (Reg.SEC_R, 2), (Reg.SEC_KEEP, 3)]:
            await io.write(reg, v)
        await io.write(setting, value)
        await io.write(Reg.CTRL, Ctrl.START_SEC)
        io.send("scores", job["scores"][:7])
        await io.wait_sent("scores")
        status = await wait_idle(io)
        assert errors_of(status) == ErrorFlag.SEC_CONFIG and io.get(io.dut.error)
        assert not status & Status.CODE_VALID
        counters = await read_counters(io)
        assert counters["CAUSE"] & 0xF == SecError.ANALYZER.value
        assert counters["KEPT"] == 0 and counters["SEC_CYCLES"] == 0
        assert not io.beats("mask") and not io.beats("code")
        await io.write(Reg.CTRL, Ctrl.START_SIC)            # no code: refused
        assert errors_of(await io.read(Reg.STATUS)) == ErrorFlag.SEC_CONFIG | ErrorFlag.COMMAND
        await io.write(Reg.CTRL, Ctrl.CLEAR)
        return await traced_program(io, p, job)

    rec, io = run_program(p, program, stalls=0.2, seed=value & 0xFF)
    check_job(p, good, rec, io)


@pytest.mark.parametrize("setting, value", [
    ("frame_stride", 13), ("layer", 4), pytest.param("layer", 1 << 20, marks=pytest.mark.slow),
    ("mean", 1)])
def test_bad_sic_settings(setting, value):
    """MATCHER flag: the matcher rejects the job, the zip still drains its tokens, nothing leaves
    on ``sic``; the next good SIC job on the same code works. ``mean``: SIC_REPR.MEAN in a unit
    built with ``representatives = "first"``."""
    p = P7.replace(representatives="first") if setting == "mean" else P7
    rng = np.random.default_rng(11)
    job = random_job(rng, p, M=40, keep=12)
    job.update(frame_stride=5, row_stride=2)
    if setting == "mean":
        job.update(representative="first")

    async def program(io):
        rec = await traced_program(io, p, record_of(p, job))
        n = sum(rec["kept_mask"])
        reg = {"frame_stride": Reg.SIC_FRAME_STRIDE, "layer": Reg.SIC_LAYER,
               "mean": Reg.SIC_REPR}[setting]
        await io.write(reg, value)
        sic_before = len(io.beats("sic"))
        io.send("tokens", [{"vector": [5, 5, 5, 5], "last": int(i == n - 1)} for i in range(n)])
        await io.write(Reg.CTRL, Ctrl.START_SIC)
        await io.wait_sent("tokens")
        status = await wait_idle(io)
        assert errors_of(status) == ErrorFlag.MATCHER
        assert len(io.beats("sic")) == sic_before
        assert (await read_counters(io))["SIC_TOKENS"] == n
        await io.write(Reg.CTRL, Ctrl.CLEAR)
        return await traced_program(io, p, record_of(p, job))

    rec, io = run_program(p, program, stalls=0.2, seed=value)
    check_job(p, job, rec, io)


@pytest.mark.parametrize("extra", [pytest.param(-3, marks=pytest.mark.slow), -1, 1,
                                   pytest.param(4, marks=pytest.mark.slow)])
def test_token_count_mismatch(extra):
    """``last`` too early (fewer tokens than kept indices) or too late (more): TOKENS set, the
    other side drained, ``sic`` still ends with ``last``, idle; the next job is good."""
    p = P7
    rng = np.random.default_rng(20 + extra)
    job = random_job(rng, p, M=36, keep=10)

    async def program(io):
        rec = await traced_program(io, p, record_of(p, job))
        n = sum(rec["kept_mask"])
        count = n + extra
        sic_before = len(io.beats("sic"))
        io.send("tokens", [{"vector": [i, 1, 2, 3], "last": int(i == count - 1)}
                           for i in range(count)])
        await io.write(Reg.CTRL, Ctrl.START_SIC)
        await io.wait_sent("tokens")
        status = await wait_idle(io)
        assert errors_of(status) == ErrorFlag.TOKENS and io.get(io.dut.error)
        counters = await read_counters(io)
        assert counters["SIC_TOKENS"] == count
        beats = io.beats("sic")[sic_before:]
        tokens_out = [b for b in beats if b["token"]]
        assert len(tokens_out) == min(n, count)
        assert beats[-1]["last"] and not any(b["last"] for b in beats[:-1])
        await io.write(Reg.CTRL, Ctrl.CLEAR)
        return await traced_program(io, p, record_of(p, job))

    rec, io = run_program(p, program, stalls=0.25, seed=extra + 10)
    check_job(p, job, rec, io)


def test_decoder_failure_never_hangs():
    """A code the decoder rejects (the stored nbits corrupted through the simulator: the encoder
    never writes one) raises DECODER with the decoder's cause; a terminator ends the matcher's
    job, the tokens are drained, and the unit is idle again."""
    p = P7
    rng = np.random.default_rng(8)
    job = random_job(rng, p, M=30, keep=9)
    dut = FocusUnit(p, icg_cell=None)

    async def program(io):
        rec = await traced_program(io, p, record_of(p, job))
        n = sum(rec["kept_mask"])
        # The code's length as SEC reported it, minus one bit: the last code runs past nbits.
        nbits = await io.read(Reg.NBITS)
        sic_before = len(io.beats("sic"))
        io.ctx.set(dut.probes["code_nbits"], nbits - 1)
        io.send("tokens", [{"vector": [3, 1, 2, 3], "last": int(i == n - 1)} for i in range(n)])
        await io.write(Reg.CTRL, Ctrl.START_SIC)
        await io.wait_sent("tokens")
        status = await wait_idle(io)
        assert ErrorFlag.DECODER in errors_of(status)
        cause = (await read_counters(io))["CAUSE"] >> 4
        assert cause == DecodeError.TRUNCATED.value
        beats = io.beats("sic")[sic_before:]
        assert beats and beats[-1]["last"]
        return rec

    rec, io = run_program(p, program, stalls=0.2, seed=8, dut=dut)
    check_job(p, job, rec, io)



@pytest.mark.parametrize("p", [P7, P1], ids=["c7", "c1"])
def test_start_latencies(p):
    """Data offered before the start waits for it: the first score transfers 2 cycles after the
    cycle of the START_SEC write, the first token 9 cycles after START_SIC's, and its map beat
    ``SIC_INPUT_LATENCY + matcher_latency + rounds - 1`` cycles after the token (no stalls)."""
    rng = np.random.default_rng(6)
    job = random_job(rng, p, M=24, keep=6)
    job["representative"] = "first"

    async def program(io):
        rec = record_of(p, job)
        for reg, value in [(Reg.SEC_M, 24), (Reg.SEC_R, rec["R"]), (Reg.SEC_KEEP, 6),
                           (Reg.SEC_MODE, sec_mode_word(job["mode"])),
                           (Reg.SIC_FRAME_STRIDE, job["frame_stride"]),
                           (Reg.SIC_ROW_STRIDE, job["row_stride"])]:
            await io.write(reg, value)
        io.send("scores", rec["scores"])
        await io.tick(20)
        assert not io.transfers["scores"]
        t_sec = io.cycle
        await io.write(Reg.CTRL, Ctrl.START_SEC)
        await io.wait_sent("scores")
        await wait_idle(io)
        kept = job["tokens"][mask_of(io, 24)]
        io.send("tokens", token_beats(kept, 0, p.dim))
        await io.tick(20)
        assert not io.transfers["tokens"]
        t_sic = io.cycle
        await io.write(Reg.CTRL, Ctrl.START_SIC)
        await wait_idle(io)
        return t_sec, t_sic

    (t_sec, t_sic), io = run_program(p, program)
    assert io.transfers["scores"][0] == t_sec + 2
    assert io.transfers["tokens"][0] == t_sic + 9
    assert io.transfers["sic"][0] == (t_sic + 9 + SIC_INPUT_LATENCY + matcher_latency(p)
                                      + matcher_rounds(p) - 1)


def mask_of(io, M):
    return mask_from_beats(io.beats("mask"), M, io.dut.params.lanes)


class HeldStalls(Stalls):
    """A sink's stalls that the program can force on: ``ready`` stays low while ``hold`` is
    set (the seeded random decisions still advance, so the pattern stays reproducible)."""

    def __init__(self, p=0.0, seed=0):
        super().__init__(p, seed)
        self.hold = False

    def __call__(self):
        stall = super().__call__()
        return self.hold or stall


@pytest.mark.parametrize("restart", ["later", "next_cycle"])
@pytest.mark.parametrize("p", [P7, P1], ids=["c7", "c1"])
def test_abort_with_tokens_in_the_matcher_input(p, restart, monkeypatch):
    """CTRL.ABORT mid-column while back-pressure holds tokens in flight (spec 5, Abort). The
    column's first tokens flow; then ``sic`` is held not ready and tokens are fed one at a time
    until the two-beat FIFO before the matcher (the sequencer's ``matcher_input``) holds two:
    the matcher's pipeline is then full, a map beat waits on ``sic`` and more tokens were taken
    than map beats left. ABORT then: in the cycle after the write the unit is idle, ``tokens`` is
    not ready, the beat on offer on ``sic`` is withdrawn (the one exception to the stream rules,
    allowed to the monitor in that cycle only) and the FIFO is empty; ABORTED is set and
    the code stays valid; with ``sic`` ready again nothing more leaves. A fresh, complete job on
    the same column (same code, same tokens) then gives golden's map and unique vectors:
    ``later``, after a quiet spell and CLEAR; ``next_cycle``, started by the write right after
    the ABORT's (the decoder and the matcher are reset a cycle after the job state, so this
    start meets them with the aborted job's state still in them)."""
    column = 1
    rng = np.random.default_rng(40 + p.comparators)
    job = random_job(rng, p, M=48, keep=40)

    # The sequencer's FIFO before the matcher, recorded when the unit is elaborated.
    made = []

    class RecordedFIFO(fifo.SyncFIFO):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(sic_sequencer, "fifo", SimpleNamespace(SyncFIFO=RecordedFIFO))
    sic_stalls = HeldStalls(0.2, seed=f"{p.comparators}:sic")
    stalls = {"scores": 0.2, "tokens": 0.2, "mask": 0.2, "code": 0.2, "sic": sic_stalls}

    async def program(io):
        dut = io.dut
        assert len(made) == 1, "the sequencer has one FIFO, matcher_input"
        held = made[0].level
        rec = await traced_program(io, p, record_of(p, job))
        kept = np.asarray(job["tokens"]).reshape(48, -1)[rec["kept_mask"]]
        beats = token_beats(kept, column, p.dim)
        n = len(beats)
        t0, s0 = len(io.transfers["tokens"]), len(io.beats("sic"))

        def taken():
            return len(io.transfers["tokens"]) - t0

        def mapped():
            return sum(b["token"] for b in io.beats("sic")[s0:])

        await io.write(Reg.CTRL, Ctrl.START_SIC)
        # The column's first tokens, with ``sic`` flowing: a few map beats leave.
        io.send("tokens", beats[:4])
        await io.wait_sent("tokens")
        for _ in range(500):
            if mapped() >= 2:
                break
            await io.tick()
        assert mapped() >= 2
        # ``sic`` held: one token at a time (none is on offer when the loop ends), each followed
        # by more cycles than the matcher needs to take a beat (``rounds``), until the FIFO
        # stays full: the back-pressure, not a token's rounds, holds it.
        sic_stalls.hold = True
        settle = 3 * matcher_rounds(p) + 4
        sent = 4
        while io.get(held) < 2:
            assert sent < n - 1, f"{sent} tokens taken and the FIFO is still not full"
            io.send("tokens", [beats[sent]])
            sent += 1
            for _ in range(200):
                if taken() == sent:
                    break
                await io.tick()
            assert taken() == sent, f"token {sent - 1} was not taken"
            await io.tick(settle)
        await io.tick(settle)
        in_flight = taken() - mapped()
        assert io.get(held) == 2
        assert io.get(dut.sic.valid) and not io.get(dut.sic.ready)
        assert io.get(dut.busy) and not io.get(dut.tokens.valid)
        assert (await io.read(Reg.STATUS)) & Status.SIC_BUSY
        sic_before = len(io.beats("sic"))
        # The stream monitor lets ``sic`` withdraw its beat in that cycle only.
        abort_cycle = io.cycle + 1
        io.allow_withdrawal("sic", abort_cycle)
        await io.write(Reg.CTRL, Ctrl.ABORT)
        # The cycle after the write.
        assert not io.get(dut.busy)
        assert not io.get(dut.tokens.ready)
        assert not io.get(dut.sic.valid)
        assert io.get(held) == 0
        sic_stalls.hold = False
        if restart == "later":
            status = await io.read(Reg.STATUS)
            assert errors_of(status) == ErrorFlag.ABORTED
            assert status & (Status.SIC_BUSY | Status.CODE_VALID) == Status.CODE_VALID
            for _ in range(3 * matcher_latency(p)):
                assert not io.get(dut.sic.valid) and not io.get(dut.tokens.ready)
                await io.tick()
            assert len(io.beats("sic")) == sic_before
            await io.write(Reg.CTRL, Ctrl.CLEAR)
        # A fresh, complete job on the same column.
        first = len(io.beats("sic"))
        io.send("tokens", beats)
        await io.write(Reg.CTRL, Ctrl.START_SIC)
        await io.wait_sent("tokens")
        status = await wait_idle(io)
        aborted = ErrorFlag.ABORTED if restart == "next_cycle" else 0
        assert errors_of(status) == aborted and status & Status.CODE_VALID
        return (rec, sent, in_flight, io.beats("sic")[first:], await read_counters(io),
                io.withdrawn("sic"), abort_cycle)

    result, io = run_program(p, program, stalls=stalls, seed=p.comparators)
    rec, sent, in_flight, again, counters, withdrawn, abort_cycle = result
    check_job(p, job, rec, io)
    n = sum(rec["kept_mask"])
    # Mid-column, with the FIFO's two beats, the beat on offer and the matcher's
    # pipeline in flight.
    assert sent < n and in_flight > 3, (sent, n, in_flight)
    assert withdrawn == [abort_cycle]
    _, _, _, want_maps, want_uniques = golden_of(p, job)
    mp, u = decode_beats(again, p.dim, job["representative"] == "mean")
    assert mp.tolist() == want_maps[:, column].tolist()
    assert u.tolist() == want_uniques[column].tolist()
    assert again[-1]["last"] and not any(b["last"] for b in again[:-1])
    assert counters["SIC_TOKENS"] == n and counters["UNIQUES"] == len(want_uniques[column])
    assert counters["CAUSE"] == 0


def test_sec_start_in_the_cycle_after_abort():
    """CTRL.ABORT of an SEC job whose first mask beat is on offer (``mask`` and ``code`` held),
    then START_SEC written in the very next cycle: in that cycle the unit is idle and the
    offers are withdrawn (allowed to the monitor there only); the new job, with
    other scores and settings, gives golden's mask and code (SEC is reset a cycle after the job
    state, so the start meets it with the aborted job still in it)."""
    p = P7
    rng = np.random.default_rng(77)
    job = random_job(rng, p, M=37, keep=20)
    first, second = record_of(p, random_job(rng, p, M=44, keep=10)), record_of(p, job)
    held = {port: HeldStalls(0.2, seed=f"{port}:held") for port in ("mask", "code")}
    stalls = {"scores": 0.2, "tokens": 0.2, "sic": 0.2, **held}

    async def program(io):
        dut = io.dut
        await write_sec_settings(io, first)
        for stall in held.values():
            stall.hold = True
        await io.write(Reg.CTRL, Ctrl.START_SEC)
        io.send("scores", first["scores"])
        await io.wait_sent("scores")
        for _ in range(2000):
            if io.get(dut.mask.valid):
                break
            await io.tick()
        assert io.get(dut.mask.valid) and io.get(dut.busy)
        before = len(io.beats("mask")), len(io.beats("code"))
        # The new job's settings go first: the START must follow the ABORT's write at once.
        await write_sec_settings(io, second)
        abort_cycle = io.cycle + 1
        for port in held:
            io.allow_withdrawal(port, abort_cycle)
        await io.write(Reg.CTRL, Ctrl.ABORT)
        assert not io.get(dut.busy) and not io.get(dut.scores.ready)
        assert not io.get(dut.mask.valid) and not io.get(dut.code.valid)
        await io.write(Reg.CTRL, Ctrl.START_SEC)
        for stall in held.values():
            stall.hold = False
        io.send("scores", second["scores"])
        await io.wait_sent("scores")
        status = await wait_idle(io)
        return before, status, {port: io.withdrawn(port) for port in held}, abort_cycle

    (before, status, withdrawn, abort_cycle), io = run_program(p, program, stalls=stalls, seed=5)
    assert before == (0, 0)
    # The encoder's words follow the mask's beats (a fork feeds both): none may be on offer.
    assert withdrawn["mask"] == [abort_cycle] and withdrawn["code"] in ([], [abort_cycle])
    assert errors_of(status) == ErrorFlag.ABORTED and status & Status.CODE_VALID
    mask, words, nbits = golden.sec(np.asarray(job["scores"]), job["keep"], mode=job["mode"],
                                    order=job["order"], word_bits=p.word_bits)
    assert np.array_equal(mask_of(io, second["M"]), mask)
    code = io.beats("code")
    assert [b["word"] for b in code] == [int(w) for w in words]
    assert code[-1]["last"] and code[-1]["nbits"] == nbits
