# amaranth: UnusedElaboratable=no
"""The map code in RTL (spec 4.5, 4.6): the block matcher's map coder and frame statistics, and
the map decoder, in the Amaranth simulator against golden.map_code, under the four stall
patterns with the protocol monitor on every stream port (sim.streams), with edge cases, error
paths and fuzzing of malformed codes."""

import numpy as np
import pytest
from helpers import stall_cross

import golden
from golden import map_code as gmc
from golden.block_match import candidate_offsets
from golden.photo import photo_tokens
from rtl.params import FocusParams
from rtl.sic.block_matcher import BlockMatcher
from sim import map_code as smc
from sim.block_match import Job, golden_job, regression_jobs, run_jobs
from sim.map_code import DecodeJob, run_decoder_jobs
from sim.streams import Stalls, stall_patterns

SMALL = dict(dim=4, window=16, tile=24, layers=6, word_bits=16)
MATCH_STALLS = stall_patterns(("cfg_stream", "i_stream"),
                              ("o_stream", "code_stream", "frame_stream"))
DECODE_STALLS = stall_patterns(("cfg_stream", "i_stream", "pos_stream"), ("o_stream",))


def small(**changes):
    return FocusParams(**{**SMALL, **changes})


def _kw(p, job):
    return dict(frame_stride=job.frame_stride, row_stride=job.row_stride, tile=p.tile,
                window=p.window)


def golden_codes(p, job, thetas):
    return gmc.match_codes(job.vectors, job.positions, theta_q=thetas[job.layer],
                           theta_bits=p.theta_bits, **_kw(p, job))


def check_coded(p, jobs, thetas, results):
    """Each job's words, nbits, symbol counts and frame beats equal golden's; its map too."""
    for n, (job, r) in enumerate(zip(jobs, results, strict=True)):
        assert not r.error and r.code_error == 0, f"job {n}"
        codes = golden_codes(p, job, thetas)
        words, nbits = gmc.encode_map(codes, variable=job.variable, ranking=job.ranking,
                                      word_bits=p.word_bits)
        assert [b["word"] for b in r.words] == list(words), f"job {n}: words"
        assert [b["last"] for b in r.words] == [0] * (len(words) - 1) + [1]
        assert [b["nbits"] for b in r.words] == [(k + 1) * p.word_bits
                                                 for k in range(len(words) - 1)] + [nbits]
        assert r.counts == gmc.symbol_counts(codes).tolist(), f"job {n}: counts"
        frames = gmc.frame_stats(codes, job.positions, job.frame_stride)
        got = [[b["frame"], b["tokens"], b["matched"], b["previous"], b["last"]]
               for b in r.frames]
        want = [[f, *row, int(f == len(frames) - 1)] for f, row in enumerate(frames.tolist())]
        assert got == want, f"job {n}: frames"
        want_map, _ = golden_job(p, job, thetas)
        assert [b["map"] for b in r.beats if b["token"]] == want_map.tolist()


def coded_jobs(p, count, seed, tokens=(20, 90)):
    jobs, thetas = regression_jobs(p, count, seed=seed, tokens=tokens)
    rng = np.random.default_rng(seed)
    for n, job in enumerate(jobs):
        job.variable = bool(n % 2)
        codes = golden_codes(p, job, thetas)
        # The adaptive ranking, or a random one (the RTL takes any permutation).
        job.ranking = (gmc.adaptive_ranking(codes) if n % 4 == 1
                       else tuple(int(s) for s in rng.permutation(8)))
    return jobs, thetas


# ---- the matcher's map coder and frame statistics ----------------------------------------------

@pytest.mark.parametrize("comparators, stalls", stall_cross([1, 7], MATCH_STALLS))
def test_matcher_code_and_frames_equal_golden(comparators, stalls):
    p = small(comparators=comparators)
    jobs, thetas = coded_jobs(p, 6, seed=comparators)
    results = run_jobs(p, jobs, thetas=thetas, stalls=stalls, seed=comparators, map_code=True,
                       frame_stats=True)
    check_coded(p, jobs, thetas, results)


@pytest.mark.parametrize("flags", [(True, False), (False, True)], ids=["code", "frames"])
def test_each_option_alone(flags):
    p = small(comparators=3, word_bits=8)
    jobs, thetas = coded_jobs(p, 3, seed=9)
    results = run_jobs(p, jobs, thetas=thetas, stalls=0.3, seed=2, map_code=flags[0],
                       frame_stats=flags[1])
    for job, r in zip(jobs, results, strict=True):
        codes = golden_codes(p, job, thetas)
        if flags[0]:
            words, _ = gmc.encode_map(codes, variable=job.variable, ranking=job.ranking,
                                      word_bits=8)
            assert [b["word"] for b in r.words] == list(words) and r.frames == []
        else:
            frames = gmc.frame_stats(codes, job.positions, job.frame_stride)
            assert [[b["tokens"], b["matched"], b["previous"]] for b in r.frames] \
                == frames.tolist() and r.words == []


def test_edges_all_new_all_matched_tiles_one_token():
    """All new (theta_q at its maximum, distinct vectors), all matched (one vector repeated,
    theta 0), jobs crossing several tiles (candidates never cross them), one-token jobs, frames
    skipped by pruning (empty frame beats), FS = 0 (one frame)."""
    p = small(comparators=7)
    rng = np.random.default_rng(4)
    full = (1 << p.theta_bits) - 1
    same = np.tile(rng.integers(-50, 50, (1, p.dim)), (70, 1))
    jobs = [
        Job(rng.integers(-128, 128, (50, p.dim)), np.arange(50), 5, 2, layer=1),
        Job(same, np.arange(70), 5, 2, layer=0, variable=True),
        Job(same, np.arange(70), 5, 2, layer=0),
        Job(same[:1], np.array([7]), 5, 2, variable=True),
        Job(same[:1], np.array([0]), 0, 1),
        Job(same[:20], np.r_[np.arange(10), 40 + np.arange(10)], 6, 2, layer=0),
        Job(same[:30], np.arange(30), 0, 3, layer=0, variable=True),
    ]
    thetas = [0, full]
    results = run_jobs(p, jobs, thetas=thetas, stalls=0.2, seed=1, map_code=True,
                       frame_stats=True)
    check_coded(p, jobs, thetas, results)
    assert results[0].counts[0] == 50                      # all new
    assert results[1].counts[0] == 3                       # one new group per tile of 24
    assert [b["tokens"] for b in results[5].frames] == [6, 4, 0, 0, 0, 0, 2, 6, 2]


@pytest.mark.slow
def test_photo_still_and_panned_frames():
    """Item 3's test: the same photo frame repeated (every token of frames 1.. matches the
    frame behind) against a panned video (a fraction well below 1)."""
    p = FocusParams(comparators=7, layers=1)
    g = 14
    fractions = {}
    for name, pan in (("still", (0, 0)), ("panned", (3, 2))):
        x, pos = photo_tokens(frames=3, grid=g, dim=p.dim, pan=pan)
        out = smc.map_code(x, pos, frame_stride=g * g, row_stride=g,
                           theta_q=golden.theta_q(0.9), params=p, stalls=0.2, seed=3)
        codes = gmc.match_codes(x, pos, frame_stride=g * g, row_stride=g,
                                theta_q=golden.theta_q(0.9))
        assert np.array_equal(out["frames"], gmc.frame_stats(codes, pos, g * g))
        fractions[name] = out["frames"][1:, 2] / out["frames"][1:, 0]
    assert np.all(fractions["still"] > 0.95)
    assert np.all(fractions["panned"] < 0.6)


def test_bad_ranking_and_matcher_errors():
    """A ranking that is not a permutation: the coder's error, no word, the map still
    right. A position going back mid-job: the matcher's error; the code and the frame streams
    still end with a ``last`` beat; the next job is right (the block went idle)."""
    p = small(comparators=3)
    jobs, thetas = coded_jobs(p, 3, seed=6)
    bad_rank = Job(jobs[0].vectors, jobs[0].positions, jobs[0].frame_stride,
                   jobs[0].row_stride, layer=jobs[0].layer, variable=True, ranking=(0,) * 8)
    pos = jobs[1].positions.copy()
    pos[15] = pos[14]
    bad_pos = Job(jobs[1].vectors, pos, jobs[1].frame_stride, jobs[1].row_stride,
                  layer=jobs[1].layer, variable=True, ranking=tuple(range(8)))
    bad_cfg = Job(jobs[1].vectors[:4], jobs[1].positions[:4], 10, 5)     # 10 + 5 + 1 = 16
    seq = [bad_rank, jobs[0], bad_pos, jobs[1], bad_cfg, jobs[2]]
    results = run_jobs(p, seq, thetas=thetas, stalls=0.2, seed=5, map_code=True,
                       frame_stats=True)
    assert results[0].code_error == 1 and results[0].words == []
    assert not results[0].error
    want_map, _ = golden_job(p, bad_rank, thetas)
    assert [b["map"] for b in results[0].beats if b["token"]] == want_map.tolist()
    assert results[2].error and results[2].words[-1]["last"] == 1
    assert results[2].frames[-1]["last"] == 1
    assert sum(b["tokens"] for b in results[2].frames) <= 15
    assert results[4].error and results[4].words == [] and results[4].frames == []
    check_coded(p, [jobs[0], jobs[1], jobs[2]], thetas, [results[1], results[3], results[5]])


def spec_word_beats(words, nbits, word_bits):
    """The code-stream beats of a string of ``nbits`` bits in ``words`` by spec 4.5's rule:
    ``nbits`` is the string's length on the last word and the bits up to the end of the word on
    the others; ``last`` on the last word only."""
    count = len(words)
    assert count == -(-nbits // word_bits)
    return [(int(w), nbits if k == count - 1 else (k + 1) * word_bits, int(k == count - 1))
            for k, w in enumerate(words)]


@pytest.mark.parametrize("stalls", [0.0, 0.3], ids=["no-stalls", "both"])
def test_bad_position_words_and_nbits(stalls):
    """Spec 4.5: when the matcher drops a job for a bad position (4.2: a position not greater
    than the previous one; that token and everything in flight are dropped), "the words of the
    symbols so far are written and end with ``last``", and every word's ``nbits`` follows the
    coder's rule (the string's length on the last word, the bits up to the end of the word on
    the others). The spec does not say how many of the tokens before the bad one are still
    coded (those in flight are dropped), so the job's beats (word, nbits, last) must equal,
    for some k, golden's ``encode_map`` of the first k of golden's symbols, with k no more
    than the bad token's index and no fewer than the map beats delivered (every resolved
    token reaches the coder and the output stage through one fork); ``code_counts`` are that
    prefix's counts and the delivered map is golden's prefix. Bad tokens early (index 1: only
    the header may be written), mid-job and late, in fixed and variable codes with 8-bit words
    (strings over many words); each followed by a good job, which equals golden."""
    p = small(comparators=7, word_bits=8)
    jobs, thetas = coded_jobs(p, 6, seed=23, tokens=(60, 90))
    seq, bad_at = [], []
    for n, job in enumerate(jobs):
        b = (1, 45, len(job.positions) - 3)[n % 3]
        pos = job.positions.copy()
        pos[b] = pos[b - 1] - (n % 2)           # equal to, or below, the previous position
        seq += [Job(job.vectors, pos, job.frame_stride, job.row_stride, layer=job.layer,
                    variable=job.variable, ranking=job.ranking), job]
        bad_at.append(b)
    results = run_jobs(p, seq, thetas=thetas, stalls=stalls, seed=23, map_code=True,
                       frame_stats=True)
    check_coded(p, jobs, thetas, results[1::2])
    coded = []
    for n, (job, b, r) in enumerate(zip(jobs, bad_at, results[::2], strict=True)):
        assert r.error and r.code_error == 0, f"job {n}"
        # Golden's symbols of the tokens before the bad one (a token's symbol depends only on
        # the tokens before it).
        head = Job(job.vectors[:b], job.positions[:b], job.frame_stride, job.row_stride,
                   layer=job.layer)
        codes = golden_codes(p, head, thetas)
        got = [(w["word"], w["nbits"], w["last"]) for w in r.words]
        prefixes = [spec_word_beats(*gmc.encode_map(codes[:k], variable=job.variable,
                                                    ranking=job.ranking,
                                                    word_bits=p.word_bits), p.word_bits)
                    for k in range(b + 1)]
        assert got in prefixes, f"job {n}: not golden's code of a prefix of {b} symbols"
        k = prefixes.index(got)
        delivered = [beat["map"] for beat in r.beats if beat["token"]]
        assert len(delivered) <= k, f"job {n}: {len(delivered)} map beats, {k} symbols"
        want_map, _ = golden_job(p, head, thetas)
        assert delivered == want_map.tolist()[:len(delivered)], f"job {n}: map"
        assert r.counts == gmc.symbol_counts(codes[:k]).tolist(), f"job {n}: counts"
        coded.append((b, k, len(r.words)))
    # Not vacuous: symbols before the bad token were coded, over several words, in the later
    # cases.
    assert all(k > 0 and words > 2 for b, k, words in coded if b > 1), coded


def test_long_code_stall():
    """A consumer stall on the code stream much longer than the pipeline: the matcher holds,
    nothing is lost."""
    p = small(comparators=7, word_bits=8)
    jobs, thetas = coded_jobs(p, 2, seed=12)
    stalls = {"i_stream": 0.1, "o_stream": 0.1,
              "code_stream": Stalls(0.2, seed=1, windows=[(20, 150), (300, 100)])}
    check_coded(p, jobs, thetas, run_jobs(p, jobs, thetas=thetas, stalls=stalls,
                                          map_code=True, frame_stats=True))


def test_default_build_has_no_code_ports():
    dut = BlockMatcher(small())
    names = set(dut.signature.members)
    assert not names & {"code_stream", "code_cfg", "frame_stream"}
    with pytest.raises(TypeError, match=r"^map_code must be True or False, not 1$"):
        BlockMatcher(small(), map_code=1)


# ---- the decoder ---------------------------------------------------------------------------------

def decode_jobs(p, count, seed):
    jobs, thetas = coded_jobs(p, count, seed)
    out = []
    for job in jobs:
        codes = golden_codes(p, job, thetas)
        words, nbits = gmc.encode_map(codes, variable=job.variable, ranking=job.ranking,
                                      word_bits=p.word_bits)
        out.append(DecodeJob([int(w) for w in words], nbits, job.positions, job.frame_stride,
                             job.row_stride))
    return out


def golden_decode(p, job):
    try:
        mp, codes = gmc.decode_map(job.words, job.nbits, job.positions,
                                   frame_stride=job.frame_stride, row_stride=job.row_stride,
                                   tile=p.tile, window=p.window, word_bits=p.word_bits)
    except ValueError as e:
        return str(e).split(":")[0]
    return mp.tolist(), codes.tolist()


def check_decoded(p, jobs, results):
    for n, (job, r) in enumerate(zip(jobs, results, strict=True)):
        want = golden_decode(p, job)
        if isinstance(want, str):
            assert r.error, f"job {n}: golden rejects ({want}), the RTL does not"
            continue
        assert not r.error, f"job {n}: the RTL rejects ({r.cause}), golden does not"
        assert [b["map"] for b in r.entries] == want[0], f"job {n}: map"
        assert [b["code"] for b in r.entries] == want[1], f"job {n}: codes"
        assert [b["last"] for b in r.entries] == [0] * (len(want[0]) - 1) + [1]


@pytest.mark.parametrize("stalls", DECODE_STALLS.values(), ids=DECODE_STALLS.keys())
@pytest.mark.parametrize("word_bits", [8, 32, 64])
def test_decoder_equals_golden(word_bits, stalls):
    p = small(word_bits=word_bits)
    jobs = decode_jobs(p, 6, seed=word_bits)
    check_decoded(p, jobs, run_decoder_jobs(p, jobs, stalls=stalls, seed=word_bits))


def test_decoder_cycles_one_token_per_cycle():
    """Without stalls and with 32-bit words (a symbol never waits for bits), a job of m tokens
    takes m + 7 cycles from its configuration beat to its last entry, inclusive (the
    docstring's latency: the header, then parse, address, read and check stages and the entry
    register), for the fixed and the variable code."""
    p = small(word_bits=32)
    jobs = decode_jobs(p, 8, seed=11)
    results = run_decoder_jobs(p, jobs)
    check_decoded(p, jobs, results)
    assert {j.words[0] >> 31 for j in jobs} == {0, 1}     # the string's first bit: variable
    assert [r.cycles - len(j.positions) for j, r in zip(jobs, results, strict=True)] == [7] * 8


def test_decoder_after_the_matcher_and_a_long_stall():
    """The matcher's own words (with their ``nbits``) into the decoder give the matcher's map,
    also when the decoder's output stalls for long."""
    p = small(comparators=7)
    jobs, thetas = coded_jobs(p, 3, seed=3)
    coded = run_jobs(p, jobs, thetas=thetas, map_code=True)
    djobs = [DecodeJob([b["word"] for b in r.words], r.words[-1]["nbits"], j.positions,
                       j.frame_stride, j.row_stride) for j, r in zip(jobs, coded, strict=True)]
    stalls = {"pos_stream": 0.2, "o_stream": Stalls(0.2, seed=4, windows=[(10, 200)])}
    results = run_decoder_jobs(p, djobs, stalls=stalls)
    for r, c in zip(results, coded, strict=True):
        assert not r.error
        assert [b["map"] for b in r.entries] == [b["map"] for b in c.beats if b["token"]]


def chain_jobs(p, count, seed, frame_stride=5, row_stride=2):
    """Jobs whose tokens copy the token just before (c = 1) or two before (c = 2: HS = 2),
    mostly at consecutive positions: the candidate's slot is written while its read is in
    flight (the decoder's forwarding). 70 tokens (three tiles of 24, the window of 16 slots
    reused) with a few gaps, some of 16 (the token before then writes the slot of the one two
    before: the later write must win); fixed and variable codes alternate."""
    rng = np.random.default_rng(seed)
    off = candidate_offsets(frame_stride, row_stride)
    jobs = []
    for n in range(count):
        pos = np.cumsum(rng.choice([1] * 12 + [2, 3, 16], size=70))
        index = {int(q): i for i, q in enumerate(pos)}
        codes = []
        for i, q in enumerate(pos):
            near = [c for c in (1, 2)
                    if index.get(int(q - off[c - 1]), -1) // p.tile == i // p.tile]
            codes.append(int(rng.choice(near)) if near and rng.random() < 0.9 else 0)
        words, nbits = gmc.encode_map(codes, variable=bool(n % 2),
                                      ranking=gmc.adaptive_ranking(codes),
                                      word_bits=p.word_bits)
        jobs.append(DecodeJob([int(w) for w in words], nbits, pos, frame_stride, row_stride))
    return jobs


@pytest.mark.parametrize("stalls", DECODE_STALLS.values(), ids=DECODE_STALLS.keys())
def test_decoder_chains_of_adjacent_tokens(stalls):
    """c = 1 and c = 2 chains (each token's candidate one or two tokens back, so its slot read
    misses that token's write) give golden's map under input stalls and output back-pressure."""
    p = small(word_bits=16)
    jobs = chain_jobs(p, 4, seed=41)
    for n, job in enumerate(jobs):
        want = golden_decode(p, job)
        assert not isinstance(want, str), f"job {n}: golden rejects ({want})"
        assert sum(c in (1, 2) for c in want[1]) > 40, f"job {n}: too few chained tokens"
    check_decoded(p, jobs, run_decoder_jobs(p, jobs, stalls=stalls, seed=41))


def test_decoder_rejections_name_golden_causes():
    """One fault each: the RTL's cause is golden's; the decoder is idle after each and decodes
    the good job that follows."""
    p = small(word_bits=16)
    pos = np.array([0, 1, 5, 6])
    ok, nbits = gmc.encode_map([0, 1, 4, 5], word_bits=16)
    ok = [int(w) for w in ok]
    var, vbits = gmc.encode_map([0, 1, 4, 5], variable=True, ranking=range(8), word_bits=16)
    var = [int(w) for w in var]
    bad_c, cbits = gmc.encode_map([0, 2, 4, 5], word_bits=16)
    cases = {
        "LENGTH": DecodeJob(ok + [0], nbits, pos, 4, 2),
        "LENGTH0": DecodeJob(ok, 0, pos, 4, 2),
        "SHORT": DecodeJob(ok, nbits - 1, pos, 4, 2),
        "TRAILING": DecodeJob(ok, nbits + 1, pos, 4, 2),
        "CANDIDATE": DecodeJob([int(w) for w in bad_c], cbits, pos, 4, 2),
        "CANDIDATE0": DecodeJob(ok, nbits, pos, 0, 2),         # c = 4 at offset FS = 0
        "HEADER": DecodeJob([var[0] ^ (1 << 12)] + var[1:], vbits, pos, 4, 2),   # rank repeats
        "HEADER_SHORT": DecodeJob([1 << 15, 0], 20, pos, 4, 2),
        # One word for 20 bits, and a variable header that does not fit in it: the header's
        # check falls in the cycle of the registered length check, which wins.
        "LENGTH_HEADER": DecodeJob([1 << 15], 20, pos, 4, 2),
        "POSITION": DecodeJob(ok, nbits, np.array([0, 1, 1, 6]), 4, 2),
        "CONFIG": DecodeJob(ok, nbits, pos, 10, 5),
        "SHORT_VAR": DecodeJob(var, vbits - 2, pos, 4, 2),
    }
    good = DecodeJob(ok, nbits, pos, 4, 2)
    seq = [j for job in cases.values() for j in (job, good)]
    results = run_decoder_jobs(p, seq, stalls=0.25, seed=8)
    for k, (name, job) in enumerate(cases.items()):
        bad, after = results[2 * k], results[2 * k + 1]
        want = name.split("_")[0].rstrip("0")
        assert bad.error and bad.cause == want, f"{name}: {bad.cause}"
        if want != "CONFIG":
            assert golden_decode(p, job) == want, name
        assert not after.error and [b["map"] for b in after.entries] == [0, 0, 0, 0]
    assert all(not r.entries for r in results[::2][-2:-1])   # CONFIG: no entry


def test_decoder_fuzzing():
    """Corrupted codes (flipped bits, other lengths, missing or extra words, random words,
    positions changed): the RTL rejects exactly the codes golden rejects and otherwise gives
    golden's map; the block is idle after every job (the next is right)."""
    p = small(word_bits=16)
    rng = np.random.default_rng(17)
    base = decode_jobs(p, 8, seed=31)
    jobs = []
    for n in range(60):
        b = base[n % len(base)]
        words, nbits, pos = list(b.words), b.nbits, b.positions.copy()
        kind = n % 6
        if kind == 0:
            for _ in range(int(rng.integers(1, 4))):
                bit = int(rng.integers(0, nbits))
                words[bit // 16] ^= 1 << (15 - bit % 16)
        elif kind == 1:
            nbits = max(1, nbits + int(rng.integers(-20, 21)))
        elif kind == 2:
            words = words[:-1] or words
        elif kind == 3:
            words = words + [int(rng.integers(0, 1 << 16))]
        elif kind == 4:
            words = [int(w) for w in rng.integers(0, 1 << 16, len(words))]
        else:
            pos = pos[:-1] if rng.random() < 0.5 else np.r_[pos, pos[-1] + 1]
            if not len(pos):
                pos = b.positions
        jobs.append(DecodeJob(words, nbits, pos, b.frame_stride, b.row_stride))
    results = run_decoder_jobs(p, jobs, stalls=0.2, seed=6)
    check_decoded(p, jobs, results)
    rejected = sum(r.error for r in results)
    assert 15 < rejected < len(jobs)


def test_sim_decode_map_api():
    x, pos = photo_tokens(frames=2, grid=8, dim=32)
    tq = golden.theta_q(0.85)
    codes = gmc.match_codes(x, pos, frame_stride=64, row_stride=8, theta_q=tq)
    words, nbits = gmc.encode_map(codes, variable=True)
    mp, back = smc.decode_map(words, nbits, pos, frame_stride=64, row_stride=8, stalls=0.3)
    assert np.array_equal(mp, golden.block_match(x, pos, frame_stride=64, row_stride=8,
                                                 theta_q=tq).map)
    assert np.array_equal(back, codes)
    with pytest.raises(ValueError, match=r"^SHORT: the map decoder rejected the code$"):
        smc.decode_map(words, nbits - 3, pos, frame_stride=64, row_stride=8)
    with pytest.raises(ValueError, match=r"^frame_stride \+ row_stride \+ 1"):
        smc.decode_map(words, nbits, pos, frame_stride=250, row_stride=8)
