"""golden.map_code: the compressed similarity map and the per-frame statistics (spec 4.5, 4.6),
against naive references written from the spec's text."""

import numpy as np
import pytest

import golden
from golden import map_code as mc
from golden.photo import photo_tokens
from rtl.params import FocusParams
from sim.block_match import regression_jobs

G = 14
FS, HS = G * G, G


def naive_codes(vectors, positions, fs, hs, theta_q, theta_bits, tile):
    """Spec 4.2 read literally, returning the symbol: 0 new, else the best c (strictly larger
    cosine wins, so the smallest c among equals)."""
    vecs = [[int(e) for e in row] for row in np.asarray(vectors)]
    pos = [int(p) for p in positions]
    out = []
    for s in range(len(pos)):
        start = s - s % tile
        x = vecs[s]
        nx = sum(e * e for e in x)
        best = None                                     # (dot, ny, c)
        for c in range(1, 8):
            off = (c >> 2) * fs + ((c >> 1) & 1) * hs + (c & 1)
            if off == 0:
                continue
            js = [k for k in range(start, s) if pos[k] == pos[s] - off]
            if not js:
                continue
            y = vecs[js[0]]
            ny = sum(e * e for e in y)
            d = sum(a * b for a, b in zip(x, y, strict=True))
            if ny == 0 or not (nx > 0 and d > 0 and d * d * (1 << (2 * theta_bits))
                               > theta_q * theta_q * nx * ny):
                continue
            if best is None or d * d * best[1] > best[0] ** 2 * ny:
                best = (d, ny, c)
        out.append(0 if best is None else best[2])
    return np.array(out, dtype=np.int64)


def naive_encode(codes, variable, ranking, word_bits):
    """The string as Python text of '0'/'1', cut into words."""
    if variable:
        bits = "1" + "".join(format(s, "03b") for s in ranking)
        table = {0: "0", 1: "100", 2: "101", 3: "110", 4: "11100", 5: "11101", 6: "11110",
                 7: "11111"}
        bits += "".join(table[ranking.index(int(c))] for c in codes)
    else:
        bits = "0" + "".join(format(int(c), "03b") for c in codes)
    nbits = len(bits)
    bits += "0" * (-nbits % word_bits)
    words = [int(bits[i:i + word_bits], 2) for i in range(0, len(bits), word_bits)]
    return words, nbits


def _photo(frames=3, pan=(3, 2)):
    return photo_tokens(frames=frames, grid=G, dim=32, pan=pan)


@pytest.mark.parametrize("theta", [0.85, 0.9, 0.95])
def test_photo_round_trip(theta):
    x, pos = _photo()
    tq = golden.theta_q(theta)
    codes = mc.match_codes(x, pos, frame_stride=FS, row_stride=HS, theta_q=tq)
    assert np.array_equal(codes, naive_codes(x, pos, FS, HS, tq, 8, 1024))
    want = golden.block_match(x, pos, frame_stride=FS, row_stride=HS, theta_q=tq).map
    assert 0 < (codes == 0).sum() < codes.size          # both kinds occur
    for variable in (False, True):
        words, nbits = mc.encode_map(codes, variable=variable)
        ranking = mc.adaptive_ranking(codes)
        assert (list(words), nbits) == naive_encode(codes, variable, ranking, 32)
        assert nbits == mc.map_code_bits(codes, variable)
        mp, back = mc.decode_map(words, nbits, pos, frame_stride=FS, row_stride=HS)
        assert np.array_equal(mp, want)
        assert np.array_equal(back, codes)


def test_regression_jobs_round_trip():
    p = FocusParams(dim=8, window=64, tile=32, layers=6)
    jobs, thetas = regression_jobs(p, 24, seed=5)
    for n, job in enumerate(jobs):
        kw = dict(frame_stride=job.frame_stride, row_stride=job.row_stride, tile=p.tile,
                  window=p.window)
        codes = mc.match_codes(job.vectors, job.positions, theta_q=thetas[job.layer], **kw)
        assert np.array_equal(codes, naive_codes(job.vectors, job.positions, job.frame_stride,
                                                 job.row_stride, thetas[job.layer], 8, p.tile))
        want = golden.block_match(job.vectors, job.positions, theta_q=thetas[job.layer],
                                  **kw).map
        rng = np.random.default_rng(n)
        ranking = tuple(int(s) for s in rng.permutation(8))
        for variable, wb in ((False, 8), (True, 13), (True, 64)):
            words, nbits = mc.encode_map(codes, variable=variable, ranking=ranking, word_bits=wb)
            assert (list(words), nbits) == naive_encode(codes, variable, ranking, wb)
            mp, back = mc.decode_map(words, nbits, job.positions, word_bits=wb, **kw)
            assert np.array_equal(mp, want)


def test_adaptive_ranking_and_entropy():
    codes = np.array([0, 0, 4, 4, 4, 1, 7])
    assert mc.adaptive_ranking(codes) == (4, 0, 1, 7, 2, 3, 5, 6)
    assert mc.symbol_counts(codes).tolist() == [2, 1, 0, 0, 3, 0, 0, 1]
    p = np.array([2, 1, 3, 1]) / 7
    assert mc.entropy_bits(codes) == pytest.approx(float(-(p * np.log2(p)).sum()))
    assert mc.entropy_bits([]) == 0.0 and mc.entropy_bits([3, 3]) == 0.0
    # 25 header bits + ranks 0,0,0,1,1,2,3 -> 1+1+1+3+3+3+3
    assert mc.map_code_bits(codes, True) == 25 + 15
    assert mc.map_code_bits(codes, False) == 1 + 21


def test_edges():
    # empty job: the header only
    words, nbits = mc.encode_map([], variable=False)
    assert (list(words), nbits) == ([0], 1)
    back = mc.decode_map(words, nbits, np.zeros(0, int), frame_stride=3, row_stride=1)
    assert [a.size for a in back] == [0, 0]
    words, nbits = mc.encode_map([], variable=True, ranking=range(8))
    assert nbits == 25
    # all new, all matched to the left neighbour
    pos = np.arange(40)
    mp, _ = mc.decode_map(*mc.encode_map(np.zeros(40, int)), pos, frame_stride=20, row_stride=5)
    assert mp.tolist() == list(range(40))
    codes = np.r_[0, np.ones(39, int)]
    mp, _ = mc.decode_map(*mc.encode_map(codes, variable=True), pos, frame_stride=20,
                          row_stride=5, tile=64)
    assert mp.tolist() == [0] * 40
    # across a tile boundary candidate 1 does not exist: the code is rejected
    with pytest.raises(ValueError, match=r"^CANDIDATE: token 16 "):
        mc.decode_map(*mc.encode_map(codes), pos, frame_stride=20, row_stride=5, tile=16)
    codes[16] = codes[32] = 0
    mp, _ = mc.decode_map(*mc.encode_map(codes), pos, frame_stride=20, row_stride=5, tile=16)
    assert mp.tolist() == [0] * 16 + [1] * 16 + [2] * 8


def test_rejections():
    pos = np.array([0, 1, 5, 6])
    kw = dict(frame_stride=4, row_stride=2)
    ok, nbits = mc.encode_map([0, 1, 4, 5])               # 6 - 5 = 1, 5 - 4 = 1: exist
    mc.decode_map(ok, nbits, pos, **kw)
    with pytest.raises(ValueError, match=r"^LENGTH: nbits = 13 needs 1 word"):
        mc.decode_map([0, 0], 13, pos, **kw)
    with pytest.raises(ValueError, match=r"^HEADER: nbits = 0"):
        mc.decode_map([], 0, pos, **kw)
    with pytest.raises(ValueError, match=r"^HEADER: nbits = 20 is shorter"):
        mc.decode_map([1 << 31], 20, pos, **kw)
    with pytest.raises(ValueError, match=r"^HEADER: the ranking \[0, 0,"):
        mc.decode_map([1 << 31], 25, pos, **kw)
    with pytest.raises(ValueError, match=r"^SHORT: the symbol of token 3 runs past nbits = 12"):
        mc.decode_map(ok, 12, pos, **kw)
    with pytest.raises(ValueError, match=r"^TRAILING: the 4 symbol\(s\) end at bit position 13 "):
        mc.decode_map(ok, 14, pos, **kw)
    bad, n = mc.encode_map([0, 2, 4, 5])                  # 1 - 2 < 0: no such token
    with pytest.raises(ValueError, match=r"^CANDIDATE: token 1 \(position 1, symbol at bit "
                                         r"position 4\) names candidate 2 at position -1"):
        mc.decode_map(bad, n, pos, **kw)
    bad, n = mc.encode_map([0, 4, 0, 0])                  # offset FS = 0
    with pytest.raises(ValueError, match=r"^CANDIDATE: token 1 "):
        mc.decode_map(bad, n, pos, frame_stride=0, row_stride=2)
    for args, msg in (
            (([8], False, None), r"^codes must be symbols 0..7: codes\[0\] = 8$"),
            (([[1]], False, None), r"^codes must be 1-D"),
            (([1.0], False, None), r"^codes must be an integer array"),
            (([1], 1, None), r"^variable must be True or False, not 1$"),
            (([1], True, [0] * 8), r"^ranking must be a permutation of 0..7"),
            (([1], True, 5), r"^ranking must be a permutation of 0..7, not 5$")):
        with pytest.raises(ValueError, match=msg):
            mc.encode_map(args[0], variable=args[1], ranking=args[2])
    with pytest.raises(ValueError, match=r"^words\[0\] = 256 does not fit in word_bits = 8"):
        mc.decode_map([256], 4, [0], word_bits=8, **kw)
    with pytest.raises(ValueError, match=r"^POSITION: positions must be strictly increasing"):
        mc.decode_map(ok, nbits, [0, 1, 1, 6], **kw)
    with pytest.raises(ValueError, match=r"^frame_stride \+ row_stride \+ 1"):
        mc.decode_map(ok, nbits, pos, frame_stride=250, row_stride=10)


def test_fuzz_decoder_only_value_errors():
    """Random corruptions of good codes: every outcome is a map or a ValueError naming a cause,
    and a code that decodes re-encodes to itself (bits past nbits are zero here)."""
    rng = np.random.default_rng(11)
    x, pos = _photo(frames=2)
    codes = mc.match_codes(x, pos, frame_stride=FS, row_stride=HS, theta_q=golden.theta_q(0.9))
    causes = set()
    for n in range(300):
        variable = bool(n % 2)
        words, nbits = mc.encode_map(codes, variable=variable, word_bits=16)
        words = [int(w) for w in words]
        kind = n % 5
        if kind == 0:                                   # flip bits
            for _ in range(int(rng.integers(1, 4))):
                b = int(rng.integers(0, nbits))
                words[b // 16] ^= 1 << (15 - b % 16)
        elif kind == 1:                                 # a different length
            nbits = max(0, nbits + int(rng.integers(-40, 40)))
            words = (words + [0] * 8)[:-(-nbits // 16)]
        elif kind == 2:
            words = words[:-1]
        elif kind == 3:
            words = [int(w) for w in rng.integers(0, 1 << 16, len(words))]
        try:
            mp, back = mc.decode_map(words, nbits, pos, frame_stride=FS, row_stride=HS,
                                     word_bits=16)
        except ValueError as e:
            causes.add(str(e).split(":")[0])
            continue
        ranking = None
        if variable and words:
            head = int(format(words[0], "016b")[1:] + format(words[1], "016b")[:9], 2)
            ranking = [(head >> (3 * (7 - r))) & 7 for r in range(8)]
        again, n2 = mc.encode_map(back, variable=bool(words[0] >> 15), ranking=ranking,
                                  word_bits=16)
        assert n2 == nbits
    assert {"LENGTH", "SHORT", "CANDIDATE", "TRAILING"} <= causes


def test_frame_stats_still_and_panned():
    tq = golden.theta_q(0.9)
    fractions = {}
    for name, pan in (("still", (0, 0)), ("panned", (3, 2))):
        x, pos = _photo(frames=4, pan=pan)
        codes = mc.match_codes(x, pos, frame_stride=FS, row_stride=HS, theta_q=tq)
        stats = mc.frame_stats(codes, pos, FS)
        assert stats[:, 0].tolist() == [FS] * 4
        assert stats[0, 2] == 0                          # frame 0 has no previous frame
        fractions[name] = stats[1:, 2] / stats[1:, 0]
    assert np.all(fractions["still"] > 0.95)            # the same frame: matched to the last one
    assert np.all(fractions["panned"] < 0.6)


def test_frame_stats_reference():
    rng = np.random.default_rng(2)
    pos = np.cumsum(rng.integers(1, 9, 80))
    codes = rng.integers(0, 8, 80)
    stats = mc.frame_stats(codes, pos, 37)
    for f in range(stats.shape[0]):
        sel = pos // 37 == f
        assert stats[f].tolist() == [sel.sum(), (codes[sel] > 0).sum(), (codes[sel] >= 4).sum()]
    assert stats.shape[0] == pos[-1] // 37 + 1
    assert mc.frame_stats(codes, pos, 0).tolist() == [[80, (codes > 0).sum(), (codes >= 4).sum()]]
    assert mc.frame_stats([], np.zeros(0, int), 5).shape == (0, 3)
