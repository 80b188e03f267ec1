# amaranth: UnusedElaboratable=no
"""The host driver end to end: FocusBoard -> bit-level simulated UART -> UARTBridge -> FocusUnit
(Amaranth simulation of boards.bridge.FocusBoardCore), results compared with golden.

Small parameters (16 tokens, V = 4) and 4 clocks per bit keep the simulation short; the logic is
the board's. One simulated board is shared by the tests of this module (successive jobs on one
board is also what a user does).
"""

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from test_bridge import _watch_rules, stream_rule_checker

import golden
from boards.bridge import FocusBoardCore
from boards.host import FocusBoard, SerialTransport, token_rates
from boards.protocol import Cmd, Status, encode_request, reply_bytes, request_bytes, stream_bytes
from boards.sim_transport import SimTransport
from rtl.params import FocusParams
from rtl.top.focus_unit import ERROR_SHIFT, FOCUS_ID, Ctrl, Reg
from rtl.top.focus_unit import Status as UnitStatus

P = FocusParams(tokens=16, lanes=4, dim=4, layers=2, window=16, tile=16, comparators=2,
                word_bits=16)
DIVISOR = 4
SIC = {"frame_stride": 8, "row_stride": 4, "theta_q": 200}


class _CheckedCore(wiring.Component):
    """FocusBoardCore with the hardware stream-rule checker of tests/test_bridge.py on all five
    streams between the bridge and the Focus unit."""
    rx: In(1, init=1)
    tx: Out(1, init=1)
    rule_broken: Out(1)

    def __init__(self, sic=True):
        self.core = FocusBoardCore(P, DIVISOR, byte_timeout=40 * DIVISOR,
                                   push_timeout=20 * DIVISOR, pull_timeout=20 * DIVISOR, sic=sic)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        m.d.comb += [core.rx.eq(self.rx), self.tx.eq(core.tx)]
        unit = core.unit
        streams = {name: getattr(unit, name) for name in ("scores", "tokens", "mask", "code",
                                                          "sic")}
        m.d.comb += self.rule_broken.eq(stream_rule_checker(m, streams))
        return m


def _board(baud_error=0.0, sic=True):
    dut = _CheckedCore(sic)
    transport = SimTransport(dut, DIVISOR, baud_error=baud_error)
    transport.sim.add_testbench(_watch_rules(dut.rule_broken), background=True)
    return FocusBoard(transport, params=P), transport


@pytest.fixture(scope="module")
def board():
    return _board()[0]


def _same(result, expected):
    assert len(result) == len(expected)
    for r, e in zip(result, expected, strict=True):
        if isinstance(e, list):
            assert len(r) == len(e) and all(np.array_equal(x, y) for x, y in zip(r, e, strict=True))
        else:
            assert np.array_equal(np.asarray(r), np.asarray(e)), (r, e)


def _scores(seed, R=3, M=16, high=1000):
    return np.random.default_rng(seed).integers(0, high, size=(R, M))


def _tokens(seed, M=16, D=8):
    return np.random.default_rng(seed).integers(-8, 8, size=(M, D))


def test_registers_through_the_bridge(board):
    assert board.read_reg(Reg.ID) == FOCUS_ID
    board.write_reg(Reg.SEC_KEEP, 11)
    assert board.read_reg(Reg.SEC_KEEP) == 11


@pytest.mark.parametrize("mode, order, word_bits, keep", [
    ("spatial", None, 32, 5),
    ("temporal", 2, 16, 9),
    ("spatial", 0, 8, 16),
], ids=["spatial-adaptive-w32", "temporal-order2-w16", "spatial-order0-w8-all"])
def test_sec_equals_golden(board, mode, order, word_bits, keep):
    scores = _scores(keep, R=5 if mode == "temporal" else 3, M=14 if keep == 9 else 16)
    result = board.sec(scores, keep, mode=mode, order=order, word_bits=word_bits)
    _same(result, golden.sec(scores, keep, mode=mode, order=order, word_bits=word_bits))


@pytest.mark.parametrize("representative", ["first", "mean"])
def test_sic_equals_golden(board, representative):
    rng = np.random.default_rng(3)
    positions = np.sort(rng.choice(16, size=9, replace=False))
    tokens = _tokens(4, M=9, D=8 if representative == "first" else 4)
    tokens[3] = tokens[2]                       # make sure something matches
    result = board.sic(tokens, positions, **SIC, dim=4, representative=representative)
    _same(result, golden.sic(tokens, positions, **SIC, dim=4, representative=representative))


def test_focus_equals_golden(board):
    scores, tokens = _scores(5), _tokens(6)
    result = board.focus(scores, tokens, 6, **SIC, dim=4)
    _same(result, golden.focus(scores, tokens, 6, **SIC, dim=4))


def test_focus_keeping_nothing_equals_golden(board):
    """keep = 0 is a valid job: no token is kept and every SIC column is empty; the board returns
    golden's empty maps [0, D/V] and empty unique arrays, and the next job still works."""
    scores, tokens = _scores(10), _tokens(11)
    want = golden.focus(scores, tokens, 0, **SIC, dim=4)
    got = board.focus(scores, tokens, 0, **SIC, dim=4)
    assert got[3].shape == want[3].shape == (0, 2)
    assert [u.shape for u in got[4]] == [u.shape for u in want[4]] == [(0, 4)] * 2
    _same(got, want)
    _same(board.focus(scores, tokens, 6, **SIC, dim=4), golden.focus(scores, tokens, 6, **SIC,
                                                                      dim=4))


def test_sic_of_no_tokens():
    """golden.sic of zero tokens returns maps [0, D/V] and D/V empty unique arrays: so does the
    board, fresh (no offset code yet) or after a job, without flagging an error; then a real job
    equals golden."""
    board, _ = _board()
    tokens = np.zeros((0, 8), np.int8)
    want = golden.sic(tokens, np.zeros(0, int), **SIC, dim=4)
    for _ in range(2):
        got = board.sic(tokens, np.zeros(0, int), **SIC, dim=4)
        assert got[0].shape == want[0].shape == (0, 2)
        assert [(u.shape, u.dtype) for u in got[1]] == [(u.shape, u.dtype) for u in want[1]]
        _same(got, want)
        assert not board.status() >> ERROR_SHIFT        # no error flag
        board.sec(_scores(13), 4)
    positions = np.array([1, 4, 5, 9])
    tokens = _tokens(14, M=4).astype(np.int8)
    got, want = (api.sic(tokens, positions, **SIC, dim=4) for api in (board, golden))
    _same(got, want)
    assert [u.dtype for u in got[1]] == [u.dtype for u in want[1]] == [np.int8] * 2


def test_a_board_without_sic():
    """The iCEBreaker's SEC-only unit: the driver sees from PING that the bridge has only the
    SEC ports; ``sec`` equals golden; ``sic`` and ``focus`` raise RuntimeError and send
    nothing, and the board still works."""
    board, _ = _board(sic=False)
    assert not board.has_sic and len(board.info["push"]) == 1 and len(board.info["pull"]) == 2
    scores = _scores(12)
    _same(board.sec(scores, 6), golden.sec(scores, 6))
    with pytest.raises(RuntimeError, match="sic: this board's Focus unit was built without SIC"):
        board.sic(_tokens(1, M=4), np.arange(4), **SIC, dim=4)
    with pytest.raises(RuntimeError, match="focus: .* without SIC"):
        board.focus(scores, _tokens(2), 6, **SIC, dim=4)
    _same(board.sec(scores, 3, mode="spatial", order=1), golden.sec(scores, 3, order=1))


def test_a_stalled_job_is_aborted():
    """A SIC job whose tokens never come: the driver gives up after ``max_polls``, aborts the
    job (the board is idle, no flag left) and the next job equals golden."""
    board, _ = _board()
    scores = _scores(8)
    board.sec(scores, 5)
    board.max_polls = 5
    board.write_reg(Reg.CTRL, Ctrl.START_SIC)
    assert board.status() & UnitStatus.SIC_BUSY
    with pytest.raises(RuntimeError, match="stopped.*aborted"):
        board._drain({"sic": None})
    assert board.status() == UnitStatus.CODE_VALID
    _same(board.sec(scores, 7), golden.sec(scores, 7))


@pytest.mark.parametrize("call", [
    lambda api: api.sec(np.ones((2, 4), dtype=np.int64), -1),
    lambda api: api.sec(np.ones((2, 4), dtype=np.int64), 2, mode="diagonal"),
    lambda api: api.sec(np.ones((2, 4), dtype=np.int64), 2, order=9),
    lambda api: api.sic(np.ones((3, 4), dtype=np.int64), [0, 2, 1], **SIC, dim=4),
    lambda api: api.focus(np.ones((2, 4), dtype=np.int64), np.ones((3, 4), dtype=np.int64), 2,
                          **SIC, dim=4),
], ids=["keep", "mode", "order", "positions", "token-count"])
def test_bad_input_same_error_as_golden(board, call):
    with pytest.raises(ValueError) as expected:
        call(golden)
    with pytest.raises(ValueError) as got:
        call(board)
    assert str(got.value) == str(expected.value)


def test_board_limits_are_value_errors(board):
    with pytest.raises(ValueError, match=r"^M = 17 > tokens = 16"):
        board.sec(np.ones((1, 17), dtype=np.int64), 1)
    with pytest.raises(ValueError, match=r"^position 20 >= the board's tokens = 16$"):
        board.sic(np.ones((2, 4), dtype=np.int64), [1, 20], **SIC, dim=4)
    with pytest.raises(ValueError, match=r"^dim = 8 does not match the board's dim = 4$"):
        board.sic(np.ones((2, 8), dtype=np.int64), [1, 2], **SIC, dim=8)
    with pytest.raises(ValueError, match=r">= the board's window = 16$"):
        board.sic(np.ones((2, 4), dtype=np.int64), [1, 2], frame_stride=12, row_stride=3,
                  theta_q=1, dim=4)


def test_connect_resynchronizes_a_bridge_left_mid_frame():
    core = _CheckedCore()
    transport = SimTransport(core, DIVISOR)
    transport.write(encode_request(Cmd.WRITE_REG, bytes([Reg.SEC_KEEP, 1, 2, 3, 4]))[:4])
    board = FocusBoard(transport, params=P)             # its PING lands inside that frame
    assert board.requests[Cmd.PING] == 2
    assert board.read_reg(Reg.ID) == FOCUS_ID


def test_board_recovers_from_protocol_errors(board):
    transport = board.transport
    frame = bytearray(encode_request(Cmd.WRITE_REG, bytes([Reg.SEC_KEEP, 1, 0, 0, 0])))
    frame[-2] ^= 1
    transport.write(frame)
    assert board.reply(Cmd.WRITE_REG) == (Status.BAD_CRC, b"")
    transport.write(encode_request(Cmd.PUSH, bytes(300))[:40])    # oversize and truncated
    assert board.reply(Cmd.PUSH) == (Status.OVERSIZE, b"")
    transport.write(encode_request(Cmd.READ_REG, bytes([Reg.ID]))[:3])
    assert board.resync() == Status.BREAK
    scores = _scores(8)
    _same(board.sec(scores, 4), golden.sec(scores, 4))


@pytest.mark.parametrize("baud_error", [-0.02, 0.02], ids=["-2%", "+2%"])
def test_host_baud_error(baud_error):
    board, transport = _board(baud_error)
    scores = _scores(9, R=1, M=8)
    _same(board.sec(scores, 3), golden.sec(scores, 3))
    assert transport.host_framing_errors == 0


def test_wire_bytes_match_the_protocol_model():
    board, transport = _board()
    scores = _scores(10, R=2, M=16)
    before = transport.sent + transport.received
    requests = dict(board.requests)
    board.sec(scores, 4)
    wire = transport.sent + transport.received - before
    n = {cmd: board.requests[cmd] - requests.get(cmd, 0) for cmd in board.requests}
    assert n[Cmd.WRITE_REG] == 6 and n[Cmd.READ_REG] == 1 and n[Cmd.PUSH] == 1
    code_words = -(-golden.sec(scores, 4)[2] // P.word_bits)
    model = (6 * (request_bytes(5) + reply_bytes(0)) + request_bytes(1) + reply_bytes(4)
             + stream_bytes(8, 8, 256, push=True)          # 8 score beats of 8 bytes
             + n[Cmd.PULL] * (request_bytes(3) + reply_bytes(0))
             + 4 * 1 + code_words * 4)                     # mask beats 1 byte, code beats 4
    assert wire == model
    assert n[Cmd.PULL] >= 2


def test_token_rates_model():
    rates = token_rates(P, rows=2)
    # 16 tokens, 2 rows, 4 lanes: 8 score beats of 8 bytes in one PUSH frame (6 + 1 + 64 bytes,
    # reply 9), 4 mask beats of 1 byte in one PULL (9 + 7 + 4).
    assert rates["sec_bytes"] == pytest.approx((71 + 9 + 20) / 16)
    # 16 token beats of 5 bytes (V = 4 elements of 8 bits + last) in one PUSH (6 + 1 + 80, reply
    # 9), 16 sic beats of 9 bytes (map 32 + vector 32 + 3 flags) in one PULL (9 + 7 + 144).
    assert rates["beat_bytes"]["tokens"] == 5 and rates["beat_bytes"]["sic"] == 9
    assert rates["sic_bytes"] == pytest.approx((87 + 9 + 160) / 16)
    assert rates["sic_tokens_s"] == pytest.approx(11520 / rates["sic_bytes"])


def test_serial_transport_on_a_pyserial_loopback():
    transport = SerialTransport("loop://")
    transport.write(encode_request(Cmd.PING))
    assert transport.read(6, 0.5) == encode_request(Cmd.PING)
    assert transport.read(1, 0.05) == b""
    transport.close()


@pytest.mark.cocotb
@pytest.mark.parametrize("simulator", ["icarus", "verilator"])
def test_focus_on_the_emitted_verilog_equals_golden(simulator, require_simulator):
    """The same host driver, through a bit-level UART model in cocotb, against the emitted
    Verilog of the board core (boards.tb_board)."""
    from boards.tb_board import run_board_job

    require_simulator(simulator)
    scores, tokens = _scores(11), _tokens(12)
    result = run_board_job(P, DIVISOR, scores, tokens, 7, simulator=simulator,
                           bridge_kw={"byte_timeout": 40 * DIVISOR, "push_timeout": 20 * DIVISOR,
                                      "pull_timeout": 20 * DIVISOR}, **SIC, dim=4)
    expected = golden.focus(scores, tokens, 7, **SIC, dim=4)
    assert result["mask"] == expected[0].tolist()
    assert result["words"] == expected[1].tolist() and result["nbits"] == expected[2]
    assert result["maps"] == expected[3].tolist()
    assert result["uniques"] == [u.tolist() for u in expected[4]]
    assert result["host_framing_errors"] == 0
