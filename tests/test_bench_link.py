# amaranth: UnusedElaboratable=no
"""The host-link benchmark (boards.bench_link) on a small job: the simulated board's results equal
golden (checked inside ``measure``), the bytes counted on the simulated line are the protocol's
frame sizes of the requests sent, the streams carried exactly the job's beats, and the measured
rate is positive and at most the protocol model's (which has no polling and no registers).

FocusParams.board() (the board's real parameters) with M = 16 and the default divisor 4.
"""

import pytest
from amaranth.hdl import Shape

import golden
from boards.bench_link import frame_bytes, main, markdown, measure
from boards.host import token_rates
from boards.protocol import Cmd, beat_bytes
from rtl.layouts import offset_word_layout
from rtl.params import FocusParams

P = FocusParams.board()
R, M, KEEP, COLUMNS, DIVISOR = 2, 16, 5, 2, 4


@pytest.fixture(scope="module")
def rows():
    return {r["job"]: r for r in measure(P, rows=R, tokens=M, keep=KEEP, columns=COLUMNS,
                                         seed=7, divisor=DIVISOR)}


def _pushed(row):
    """Frames, payload bytes and beats handed over (the replies' counts) of the row's PUSHes."""
    pushes = [r for r in row["log"] if r.cmd == Cmd.PUSH]
    return (len(pushes), sum(len(r.payload) for r in pushes),
            sum(int.from_bytes(r.data, "little") for r in pushes))


def _pulled(row):
    return sum(len(r.data) for r in row["log"] if r.cmd == Cmd.PULL)


def test_line_bytes_are_the_protocol_frames(rows):
    assert set(rows) == {"sec", "sic", "sic columns"}
    for row in rows.values():
        assert (row["sent"], row["received"]) == frame_bytes(row), row["job"]
        assert row["requests"] == len(row["log"]) > 0


def test_streams_carry_exactly_the_jobs_beats(rows):
    nb = token_rates(P)["beat_bytes"]
    score_beats = R * -(-M // P.lanes)
    frames, payload, handed = _pushed(rows["sec"])
    assert handed == score_beats
    assert payload == frames + score_beats * nb["scores"]      # a port byte per frame, no retries
    code_beats = -(-rows["sec"]["result"][2] // P.word_bits)
    assert _pulled(rows["sec"]) == -(-M // P.lanes) * nb["mask"] + code_beats * beat_bytes(
        Shape.cast(offset_word_layout(P)).width)
    # SIC pushes time out (the unit takes a few tokens, then waits for its output to be pulled):
    # the beats not taken are pushed again, so the payload is at least the beats.
    frames, payload, handed = _pushed(rows["sic columns"])
    assert handed == KEEP * COLUMNS
    assert (payload - frames) % nb["tokens"] == 0 and payload >= frames + handed * nb["tokens"]
    assert _pulled(rows["sic columns"]) == KEEP * COLUMNS * nb["sic"]   # "first": one beat each


def test_rates_are_positive_and_below_the_model(rows):
    for row in rows.values():
        assert 0 < row["rate"] <= row["model"], row["job"]
        assert row["ratio"] == pytest.approx(row["rate"] / row["model"])
        # the line cannot carry more than one character per 10 bit times
        assert row["cycles"] >= (row["sent"] + row["received"]) * 10 * DIVISOR
        assert row["seconds"] == pytest.approx(row["cycles"] / (DIVISOR * 115200))
    assert rows["sec"]["units"] == M and rows["sic"]["units"] == KEEP * COLUMNS
    assert rows["sic columns"]["cycles"] < rows["sic"]["cycles"]


def test_markdown_table(rows):
    text = markdown(list(rows.values()), params=P, divisor=DIVISOR, baud=115200)
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(table) == 1 + 3 and table[1].startswith(f"| sec | {M} tokens |")


def test_bad_arguments(capsys):
    assert main(["--tokens", "8", "--keep", "9"]) == 2
    assert capsys.readouterr().err.startswith("focus-rtl: error: need 1 <= keep <= tokens")


def test_a_result_that_differs_from_golden_raises(monkeypatch):
    real = golden.sec

    def wrong(scores, keep, **kw):
        mask, words, nbits = real(scores, keep, **kw)
        return ~mask, words, nbits
    monkeypatch.setattr(golden, "sec", wrong)
    with pytest.raises(AssertionError, match="sec: result 0 of the board differs from golden"):
        measure(P, rows=1, tokens=4, keep=1, columns=1, divisor=DIVISOR)
