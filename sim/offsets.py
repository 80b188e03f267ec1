"""The offset encoder's and decoder's RTL behind :mod:`golden.offsets`' signatures (spec 3.3, 6).

:func:`encode_offsets` runs :class:`rtl.sec.offset_encoder.OffsetEncoder` and :func:`decode_offsets`
runs :class:`rtl.sec.offset_decoder.OffsetDecoder`, in the Amaranth simulator or as emitted Verilog
under cocotb (Icarus or Verilator), and return what golden returns for the same arguments. Bad
arguments raise golden's own ``ValueError``; a malformed code, which the RTL decoder flags with
its ``error`` output, raises ``ValueError`` naming the RTL's :class:`DecodeError` cause.

The lower level, used by the tests, the cocotb testbench and the benchmark:

- :func:`encoder_job` / :func:`decoder_job` turn one job into stream payloads;
- :func:`run_jobs` runs many jobs back to back through one Amaranth simulation (each job starts
  when the previous one is idle), on the shared :func:`sim.streams.run_jobs`: seeded input idles
  and output back-pressure on every port and a stream-rule monitor on every port;
- :func:`encoder_result` / :func:`decoder_result` read a job's outputs back.

Cycle counts (``stats["cycles"]``, spec 6): from the job's first input transfer (its config beat)
to its last output transfer, inclusive. ``stats["end"]`` is the cycle, counted the same way, in
which ``busy`` was first seen low after the job's inputs were all sent.
"""


import numpy as np

from golden.offsets import (
    DROPPED,
    EXPGOLOMB,
    KEPT,
    RICE,
    SCHEME_SETS,
    SCHEMES,
    Scheme,
    check_code,
    check_mask,
    check_scheme,
    check_schemes,
    check_word_bits,
    scheme_bits,
)
from golden.offsets import encode_offsets as golden_encode
from golden.results import OffsetCode
from rtl.codecs import beats_to_mask, code_from_words, mask_beats
from rtl.params import FocusParams, check_limit
from rtl.sec.offset_decoder import DecodeError, OffsetDecoder
from rtl.sec.offset_encoder import EncodeError, OffsetEncoder

from . import streams
from .runner import check_simulator, run_job
from .streams import RTLFailure, rtl_failures

__all__ = ["encode_offsets", "decode_offsets", "fit_params", "mask_beats",
           "beats_to_mask", "encoder_job", "decoder_job", "encoder_result", "decoder_result",
           "checked_code", "check_encoder_results", "run_jobs", "run_encoder_jobs",
           "run_decoder_jobs", "decode_error_message",
           "ENCODER_PORTS", "DECODER_PORTS", "random_mask", "regression_masks", "fuzz_codes",
           "job_budget"]

#: (input ports, output ports) of each block, in the order :func:`run_jobs` drives them.
ENCODER_PORTS = (("cfg_stream", "i_stream"), ("o_stream",))
DECODER_PORTS = (("cfg_stream", "i_stream"), ("o_stream", "idx_stream"))

_DECODE_MESSAGES = {
    DecodeError.CONFIG: "the job's M is 0 or larger than the decoder's tokens",
    DecodeError.HEADER: "nbits is shorter than the header (5 + bit_length(M) bits)",
    DecodeError.SHORT: "the words hold fewer than nbits bits",
    DecodeError.COUNT: "the header's count n is larger than M",
    DecodeError.ZEROS: "an Exp-Golomb code has bit_length(tokens) or more leading zeros, so "
                       "its index would be >= M",
    DecodeError.TRUNCATED: "a code runs past nbits",
    DecodeError.INDEX: "a code gives an index >= M",
    DecodeError.TRAILING: "trailing bits: the codes end before nbits",
    DecodeError.UNARY: "a Rice code's unary part has 2 * bit_length(M) or more zeros",
}


def decode_error_message(cause):
    """The ``ValueError`` message for a decoder ``cause`` (a :class:`DecodeError` or its value)."""
    cause = DecodeError(cause)
    return f"malformed offset code: {_DECODE_MESSAGES[cause]} (RTL decoder cause {cause.name})"


def fit_params(M, word_bits=32, argument="M", schemes="all"):
    """The parameters used when none are given: ``tokens`` the next power of two >= max(M, 8)
    (so nearby sizes share a netlist), ``word_bits``, ``offset_schemes = schemes`` and the
    default ``lanes``. M beyond the RTL's 65536 tokens raises ``ValueError`` naming ``argument``
    (the user's name for M)."""
    M = check_limit("tokens", M, argument)
    return FocusParams(tokens=1 << max(3, (M - 1).bit_length()), word_bits=word_bits,
                       offset_schemes=schemes)


def _check_params(params, M, word_bits, schemes=None):
    if not isinstance(params, FocusParams):
        raise TypeError(f"params must be a FocusParams, not {params!r}")
    if params.word_bits != word_bits:
        raise ValueError(f"params.word_bits = {params.word_bits} does not match word_bits = "
                         f"{word_bits}")
    if schemes is not None and params.offset_schemes != schemes:
        raise ValueError(f"params.offset_schemes = {params.offset_schemes!r} does not match "
                         f"schemes = {schemes!r}")
    if M > params.tokens:
        raise ValueError(f"M = {M} > tokens = {params.tokens}: the job has more tokens than the "
                         f"unit's buffer (FocusParams.tokens)")


# ---- payloads --------------------------------------------------------------------------------

def as_scheme(order):
    """An encoder job's scheme: None (adaptive), an order 0..7 (kept set, Exp-Golomb, as before
    the set and the family were added) or a :class:`golden.offsets.Scheme`."""
    if order is None or isinstance(order, Scheme):
        return order
    return Scheme(KEPT, EXPGOLOMB, int(order))


def encoder_job(mask, order, lanes):
    """``{port: payloads}`` of one encoder job (``order``: None is adaptive, an int a kept-set
    Exp-Golomb order, or a :class:`golden.offsets.Scheme`)."""
    mask = np.asarray(mask, bool)
    scheme = as_scheme(order)
    fixed = scheme or Scheme(KEPT, EXPGOLOMB, 0)
    cfg = {"tokens": int(mask.size), "order": fixed.order, "dropped": fixed.coded,
           "rice": fixed.family, "adaptive": int(scheme is None)}
    return {"cfg_stream": [cfg], "i_stream": mask_beats(mask, lanes)}


def decoder_job(words, nbits, tokens):
    """``{port: payloads}`` of one decoder job; ``last`` is set on the final word."""
    words = [int(w) for w in words]
    return {"cfg_stream": [{"tokens": int(tokens), "nbits": int(nbits)}],
            "i_stream": [{"word": w, "nbits": 0, "last": int(k == len(words) - 1)}
                         for k, w in enumerate(words)]}


def encoder_result(result):
    """``(words uint64 array, nbits)`` from an encoder job's :func:`run_jobs` result, checking the
    framing (``last`` on the final word only, the same ``nbits`` on every word)."""
    if result["error"]:
        raise AssertionError(f"the encoder flagged {EncodeError(result['cause']).name} on a "
                             f"well-formed job")
    return code_from_words(result["o_stream"])


def decoder_result(result, M, lanes):
    """``(mask, indices)`` from a decoder job's :func:`run_jobs` result, or raise ``ValueError``
    when the decoder flagged the job. Checks the framing of both outputs on success, and that
    nothing was ever written outside the mask."""
    beats, idx = result["o_stream"], result["idx_stream"]
    count = -(-M // lanes)
    written = beats_to_mask(beats, lanes)
    indices = [x["index"] for x in idx]
    if len(beats) > count or written[M:].any() or any(j >= M for j in indices):
        raise AssertionError(f"the decoder wrote outside the mask: {len(beats)} beats for M = {M} "
                             f"({count} allowed), indices {indices}")
    if any(b["last"] for b in beats[:-1]) or any(x["last"] for x in idx[:-1]):
        raise AssertionError("a last flag before the final beat")
    if result["error"]:
        raise ValueError(decode_error_message(result["cause"]))
    if len(beats) != count or not beats[-1]["last"]:
        raise AssertionError(f"{len(beats)} mask beats for M = {M} (expected {count}, the final "
                             f"one flagged last)")
    mask = written[:M]
    if indices != np.flatnonzero(mask).tolist() or (idx and not idx[-1]["last"]):
        raise AssertionError(f"the index stream {indices} does not match the mask "
                             f"{np.flatnonzero(mask).tolist()}")
    return mask, np.array(indices, np.int64)


# ---- regression and fuzz inputs --------------------------------------------------------------

def _sizes(params, rng):
    """A job size M in 1 .. tokens, biased to the edges (1, a beat, a beat +- 1, tokens)."""
    lanes, top = params.lanes, params.tokens
    edges = [1, 2, lanes - 1, lanes, lanes + 1, 2 * lanes, top - 1, top]
    if rng.random() < 0.35:
        return int(min(top, max(1, edges[rng.integers(len(edges))])))
    return int(rng.integers(1, top + 1))


def random_mask(M, rng):
    """A keep mask of M tokens: empty, full, uniform at a random density, one token, clustered
    runs, or a few tokens far apart (long gaps: codes longer than a word)."""
    kind = rng.choice(6, p=[0.08, 0.08, 0.44, 0.08, 0.16, 0.16])
    if kind == 0:
        return np.zeros(M, bool)
    if kind == 1:
        return np.ones(M, bool)
    if kind == 2:
        return rng.random(M) < rng.random()
    if kind == 3:
        mask = np.zeros(M, bool)
        mask[rng.integers(M)] = True
        return mask
    if kind == 4:                       # runs of kept and dropped tokens, as on real images
        mask, at, keep = np.zeros(M, bool), 0, bool(rng.integers(2))
        while at < M:
            run = int(rng.geometric(1.0 / rng.choice([2, 4, 8, 16])))
            mask[at:at + run] = keep
            at, keep = at + run, not keep
        return mask
    return rng.random(M) < min(1.0, rng.choice([1, 2, 3]) / M)


def usable(mask, scheme):
    """``scheme`` if it can code ``mask``, else the Exp-Golomb scheme of the same set and order
    (a Rice quotient of 2 * bit_length(M) or more has no code)."""
    if scheme is None or isinstance(scheme, int) or scheme.family == EXPGOLOMB:
        return scheme
    if scheme_bits(mask)[scheme] >= 0:
        return scheme
    return scheme._replace(family=EXPGOLOMB)


def regression_masks(params, count, seed=0):
    """``count`` encoder jobs ``(mask, scheme)``: first the edges (M = 1 and M = tokens; no token,
    every token, only the last one (the longest gap and code), the first and the last; at orders
    0, adaptive and 7, then the dropped set in Rice at order 0 and Exp-Golomb at order 7), then
    random masks with M over 1 .. tokens (edges favoured), densities 0 to 1 (empty, full,
    uniform, single, clustered, sparse with long gaps) and the schemes None (adaptive), then the
    32 fixed ones in turn (an int is a kept-set Exp-Golomb order; a Rice scheme that cannot code
    the mask becomes the Exp-Golomb one: :func:`usable`). Only the schemes of
    ``params.offset_schemes`` are used (``"kept-exp-golomb"``: no dropped-set edges, and the 8
    kept-set Exp-Golomb schemes in turn)."""
    rng = np.random.default_rng(seed)
    allowed = SCHEME_SETS[params.offset_schemes]
    orders = [None, *allowed]
    top = params.tokens
    edges = []
    for order in (0, None, 7, Scheme(DROPPED, RICE, 0), Scheme(DROPPED, EXPGOLOMB, 7)):
        if isinstance(order, Scheme) and order not in allowed:
            continue
        only_last = np.zeros(top, bool)
        only_last[-1] = True            # the longest gap, tokens - 1: the longest codes
        ends = np.zeros(top, bool)
        ends[[0, -1]] = True
        edges += [(mask, usable(mask, order))
                  for mask in (only_last, ends, np.ones(top, bool), np.zeros(top, bool),
                               np.ones(1, bool), np.zeros(1, bool))]
    jobs = []
    for k in range(max(0, count - len(edges))):
        mask = random_mask(_sizes(params, rng), rng)
        jobs.append((mask, usable(mask, orders[k % len(orders)])))
    return edges[:count] + jobs


def golden_code(mask, order, word_bits, schemes="all"):
    """:func:`golden.offsets.encode_offsets` of an encoder job's mask and scheme (None, an
    order, or a :class:`golden.offsets.Scheme`), for an encoder built with ``schemes``
    (``FocusParams.offset_schemes``)."""
    scheme = as_scheme(order)
    if scheme is None:
        return golden_encode(mask, None, word_bits, schemes=schemes)
    return golden_encode(mask, scheme.order, word_bits, coded=scheme.coded, family=scheme.family,
                         schemes=schemes)


def checked_code(n, mask, order, result, params):
    """``(words, nbits)`` of encoder job ``n`` (``mask`` and ``order``, as for
    :func:`encoder_job`) from its :func:`run_jobs` ``result`` (:func:`encoder_result`), asserted
    equal to :func:`golden_code`'s for an encoder built with ``params``."""
    words, nbits = encoder_result(result)
    want, want_nbits = golden_code(mask, order, params.word_bits, params.offset_schemes)
    assert nbits == want_nbits and np.array_equal(words, want), (
        f"job {n} (M = {mask.size}, order {order}, kept {np.flatnonzero(mask).tolist()}): "
        f"RTL {words.tolist()} / {nbits}, golden {want.tolist()} / {want_nbits}")
    return words, nbits


def check_encoder_results(params, jobs, results):
    """Assert that each encoder job of ``jobs`` (``(mask, order)`` pairs) gave golden's code
    (:func:`checked_code`); returns the ``(words, nbits)`` of each."""
    return [checked_code(n, mask, order, result, params)
            for n, ((mask, order), result) in enumerate(zip(jobs, results, strict=True))]


def _encode(mask, order, word_bits):
    words, nbits = golden_code(mask, usable(mask, order), word_bits)
    return [int(w) for w in words], nbits


def fuzz_codes(params, count, seed=0):
    """``count`` decoder jobs ``(words, nbits, M)``, 1 <= M <= tokens: valid codes and codes
    mutated in every way the decoder must catch: flipped bits, nbits moved by a few bits or by a
    word (past the words: too short), words dropped or appended (appended words are ignored by
    golden), the header's count raised, a long run of zeros written over a code, M changed, and
    wholly random words. Whether each is valid is for golden to say."""
    rng = np.random.default_rng(seed)
    wb = params.word_bits
    limit = (1 << params.nbits_bits) - 1
    jobs = []
    while len(jobs) < count:
        M = _sizes(params, rng)
        mask = random_mask(M, rng)
        words, nbits = _encode(mask, [None, *SCHEMES][rng.integers(33)], wb)
        bits = [(w >> (wb - 1 - t)) & 1 for w in words for t in range(wb)]
        kind = int(rng.integers(10))
        if kind == 1:                   # flip 1 to 3 bits of the string
            for at in rng.integers(0, nbits, int(rng.integers(1, 4))):
                bits[at] ^= 1
        elif kind == 2:                 # nbits a few bits off
            nbits = max(0, nbits + int(rng.choice([-3, -2, -1, 1, 2, 3])))
        elif kind == 3:                 # nbits a word or more off
            nbits = max(0, nbits + int(rng.choice([-1, 1, 2])) * wb)
        elif kind == 4:                 # drop the final word, or add one to three
            if len(bits) > wb and rng.random() < 0.5:
                bits = bits[:-wb]
            else:
                bits += rng.integers(0, 2, wb * int(rng.integers(1, 4))).tolist()
        elif kind == 5:                 # count field raised (maybe above M)
            width = M.bit_length()
            count_field = min((1 << width) - 1, int(mask.sum()) + int(rng.integers(1, 4)))
            bits[5:5 + width] = [(count_field >> (width - 1 - t)) & 1 for t in range(width)]
        elif kind == 6:                 # a run of zeros over the codes
            start = 5 + M.bit_length()
            if nbits > start:
                at = int(rng.integers(start, nbits))
                run = int(rng.integers(1, 40))
                for t in range(at, min(len(bits), at + run)):
                    bits[t] = 0
        elif kind == 7:                 # the job's M changed
            M = int(min(params.tokens, max(1, M + int(rng.choice([-2, -1, 1, 2])))))
        elif kind == 8:                 # random words, random length
            n_words = int(rng.integers(1, 6))
            bits = rng.integers(0, 2, n_words * wb).tolist()
            nbits = int(rng.integers(0, n_words * wb + 1))
        if kind == 9:                   # truncate the string at a random point
            nbits = int(rng.integers(0, nbits + 1))
        bits += [0] * (-len(bits) % wb)
        words = [int("".join(map(str, bits[k:k + wb])), 2) for k in range(0, len(bits), wb)]
        if words and nbits <= limit:
            jobs.append((words, int(nbits), M))
    return jobs


# ---- the Amaranth job runner -----------------------------------------------------------------

def job_budget(jobs, inputs, p):
    """A generous cycle limit for ``jobs`` under stall probability ``p``: both blocks take
    O(beats + M) cycles per job (M from the config beat's ``tokens``)."""
    work = sum(300 + 4 * sum(len(job[port]) for port in inputs)
               + 8 * min(job["cfg_stream"][0]["tokens"], 1 << 16) for job in jobs)
    return 2000 + int(work / (1.0 - p) ** 2)


def run_jobs(component, ports, jobs, *, stalls=0.0, seed=0, max_cycles=None):
    """Run ``jobs`` one after the other through ``component`` in the Amaranth simulator.

    Parameters
    ----------
    component : wiring.Component
        With stream ports and a ``busy`` output; ``error`` and ``cause`` are recorded per job.
    ports : (inputs, outputs)
        Port names, e.g. :data:`ENCODER_PORTS`.
    jobs : list of dict
        ``{input port: [payload, ...]}`` per job; the input ports are fed in order (the config
        beat first), each with its own stalls. A job starts in the second cycle after the
        previous one ended (the first cycle after its inputs in which ``busy`` was low).
    stalls : float, or dict of port name -> float
        Probability of an input idle / output back-pressure cycle, seeded per port from ``seed``.
    max_cycles : int or None
        A hang is an ``AssertionError``. None: a generous bound from the beat counts.

    Returns
    -------
    list of dict
        Per job: ``{output port: [payload, ...], "error", "cause", "cycles", "end", "start"}``
        (``start`` is the absolute cycle of the config beat; ``cycles`` and ``end`` as in the
        module doc).
    """
    inputs, outputs = ports
    if max_cycles is None:
        max_cycles = job_budget(jobs, inputs, streams.stall_bounds(stalls, (*inputs, *outputs))[0])
    run = streams.run_jobs(component, jobs, inputs=inputs, outputs=outputs, end="idle",
                           stalls=stalls, seed=seed, max_cycles=max_cycles,
                           trace=("error", "cause"))
    results = []
    for job in run.jobs:
        start, end = job["first_input"], job["end"]
        results.append({**job["outputs"], "error": run.trace["error"][end],
                        "cause": run.trace["cause"][end], "start": start,
                        "end": end - start + 1, "cycles": job["cycles"]})
    return results


def run_encoder_jobs(params, jobs, *, simulator="amaranth", stalls=0.0, seed=0):
    """Encoder jobs ``[(mask, order), ...]`` through the RTL; returns :func:`run_jobs` results."""
    payloads = [encoder_job(mask, order, params.lanes) for mask, order in jobs]
    if simulator == "amaranth":
        return run_jobs(OffsetEncoder(params), ENCODER_PORTS, payloads, stalls=stalls, seed=seed)
    return _run_cocotb("offset_encoder", params, payloads, simulator, stalls, seed)


def run_decoder_jobs(params, jobs, *, simulator="amaranth", stalls=0.0, seed=0):
    """Decoder jobs ``[(words, nbits, M), ...]`` through the RTL; returns :func:`run_jobs`
    results."""
    payloads = [decoder_job(words, nbits, M) for words, nbits, M in jobs]
    if simulator == "amaranth":
        return run_jobs(OffsetDecoder(params), DECODER_PORTS, payloads, stalls=stalls, seed=seed)
    return _run_cocotb("offset_decoder", params, payloads, simulator, stalls, seed)


def _run_cocotb(block, params, payloads, simulator, stalls, seed):
    return run_job(block, params, {"jobs": payloads, "stalls": stalls, "seed": seed},
                   test_module="sim.tb.offsets", simulator=simulator, case="main")


# ---- the spec 6 API --------------------------------------------------------------------------

def encode_offsets(mask, order=None, word_bits=32, *, coded=None, family=None, schemes="all",
                   params=None, simulator="amaranth", stalls=0.0, stats=None, seed=0):
    """Encode a keep mask with the RTL encoder: the same ``(words, nbits)`` as
    :func:`golden.offsets.encode_offsets` for the same arguments.

    Parameters
    ----------
    mask : array_like of bool, shape [M]
    order : int or None
        0..7, or None for the adaptive scheme.
    word_bits : int
        8 to 64; must equal ``params.word_bits`` when ``params`` is given.
    coded, family : as :func:`golden.offsets.encode_offsets` (a fixed scheme's set and family).
    schemes : "all" (default) or "kept-exp-golomb"
        As :func:`golden.offsets.encode_offsets`; must equal ``params.offset_schemes`` when
        ``params`` is given.
    params : FocusParams or None
        None: :func:`fit_params`. M > ``params.tokens`` raises ``ValueError``.
    simulator : str
        ``"amaranth"``, ``"icarus"`` or ``"verilator"``.
    stalls : float
        Probability of an input idle and of an output back-pressure cycle (seeded by ``seed``).
    stats : dict or None
        Filled with ``cycles`` (config beat to last word, inclusive), ``order`` (the e used),
        ``coded`` and ``family`` (the set and family used, 0/1) and ``kept`` (n).

    Returns
    -------
    (numpy.ndarray of uint64, int)
    """
    mask = check_mask(mask)
    scheme = check_scheme(order, coded, family, check_schemes(schemes))
    word_bits = check_word_bits(word_bits)
    check_simulator(simulator)
    if params is None:
        params = fit_params(mask.size, word_bits, schemes=schemes)
    _check_params(params, mask.size, word_bits, schemes)
    if scheme is not None and scheme_bits(mask)[scheme] < 0:
        golden_code(mask, scheme, word_bits)      # golden's ValueError: this Rice cannot code it
    with rtl_failures("sim.encode_offsets"):
        (result,) = run_encoder_jobs(params, [(mask, scheme)], simulator=simulator,
                                     stalls=stalls, seed=seed)
        words, nbits = encoder_result(result)
    if stats is not None:
        head = int(words[0]) >> (word_bits - 5)
        stats.update(cycles=result["cycles"], order=head >> 2, coded=(head >> 1) & 1,
                     family=head & 1, kept=int(np.count_nonzero(mask)))
    return OffsetCode(words, nbits)


def decode_offsets(words, nbits, tokens, word_bits=32, *, params=None, simulator="amaranth",
                   stalls=0.0, stats=None, seed=0):
    """Decode an offset code with the RTL decoder: the same mask as
    :func:`golden.offsets.decode_offsets`, or ``ValueError`` where golden raises one.

    Argument errors (types, ranges, words that do not fit ``word_bits``) raise golden's own
    messages. A malformed code is decoded by the RTL, which flags it; the ``ValueError`` raised
    then is golden's, message and all, and its ``__cause__`` names the RTL's cause
    (:func:`decode_error_message`; when a string has several faults, the RTL reports whichever
    it meets first while streaming). Two inputs the RTL interface cannot carry, no words at all
    and ``nbits`` wider than ``nbits_bits`` (longer than any valid code for ``params.tokens``),
    are not run: golden rejects both, and its error is raised. A code golden decodes but the RTL
    flags raises :class:`sim.streams.RTLFailure`.

    Parameters
    ----------
    words, nbits, tokens, word_bits : as :func:`golden.offsets.decode_offsets`.
    params, simulator, stalls, stats, seed : as :func:`encode_offsets`; ``stats["cycles"]`` runs
        from the config beat to the last mask beat or index.

    Returns
    -------
    numpy.ndarray of bool, shape [tokens]
    """
    values, nbits, M, word_bits = check_code(words, nbits, tokens, word_bits)
    check_simulator(simulator)
    if params is None:
        params = fit_params(M, word_bits, "tokens")
    _check_params(params, M, word_bits)
    if not values or nbits >= 1 << params.nbits_bits:
        # The RTL interface cannot carry these (no words; an nbits wider than its field, so
        # longer than any valid code for up to params.tokens tokens): golden rejects both.
        error = _golden_error(values, nbits, M, word_bits)
        if error is not None:
            raise error
        raise ValueError(f"nbits = {nbits} is longer than the RTL decoder's nbits field "
                         f"({params.nbits_bits} bits at FocusParams.tokens = {params.tokens})")
    with rtl_failures("sim.decode_offsets"):
        (result,) = run_decoder_jobs(params, [(values, nbits, M)], simulator=simulator,
                                     stalls=stalls, seed=seed)
    try:
        mask, _ = decoder_result(result, M, params.lanes)
    except ValueError as flagged:       # the RTL flagged a malformed code: golden's message
        error = _golden_error(values, nbits, M, word_bits)
        if error is None:
            raise RTLFailure(f"sim.decode_offsets: the RTL decoder rejected a code golden "
                             f"decodes: {flagged}") from flagged
        raise error from flagged
    if stats is not None:
        stats.update(cycles=result["cycles"], kept=int(np.count_nonzero(mask)))
    return mask


def _golden_error(values, nbits, M, word_bits):
    """The ``ValueError`` of :func:`golden.offsets.decode_offsets` for this code (a fresh one,
    with the same message), or None when golden decodes it."""
    from golden.offsets import decode_offsets as golden_decode

    try:
        golden_decode(values, nbits, M, word_bits)
    except ValueError as exc:
        return ValueError(str(exc))
    return None
