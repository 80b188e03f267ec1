"""golden.focus against a plain-loop composition written here from the spec (no golden code shared),
and its input checks."""

import numpy as np
import pytest

import golden


def plain_code(mask, order, word_bits):
    """Spec 3.3 with Python integers: e (3 bits), the set s and the family f (1 bit each), n
    (bit_length(M) bits), then the gaps of the kept (s = 0) or dropped (s = 1) tokens in
    Exp-Golomb (f = 0) or Rice (f = 1, quotients below 2 * bit_length(M)); a fixed order is the
    kept set in Exp-Golomb, None the shortest scheme (ties: s, then f, then e smallest)."""
    M = len(mask)

    def bits(e, s, f):
        listed = [j for j in range(M) if bool(mask[j]) != bool(s)]
        out = format(e, "03b") + str(s) + str(f) + format(len(listed), f"0{M.bit_length()}b")
        for i, j in enumerate(listed):
            g = j - (listed[i - 1] + 1 if i else 0)
            if f:
                if g >> e >= 2 * M.bit_length():
                    return None
                out += "0" * (g >> e) + "1" + (format(g % (1 << e), f"0{e}b") if e else "")
            else:
                v = g + (1 << e)
                out += "0" * (v.bit_length() - 1 - e) + format(v, "b")
        return out

    if order is None:
        strings = [bits(e, s, f) for s in (0, 1) for f in (0, 1) for e in range(8)]
        string = min((x for x in strings if x is not None), key=len)   # min keeps the first
    else:
        string = bits(order, 0, 0)
    padded = string + "0" * (-len(string) % word_bits)
    words = [int(padded[i:i + word_bits], 2) for i in range(0, len(padded), word_bits)]
    return words, len(string)


def plain_match(vectors, positions, fs, hs, theta_q, F, tile, representative):
    """Spec 4.2 as a loop over tokens."""
    S = len(vectors)
    vec = [[int(x) for x in v] for v in vectors]
    where = {int(q): s for s, q in enumerate(positions)}
    maps, firsts, members = [], [], []
    for s in range(S):
        x, p = vec[s], int(positions[s])
        nx = sum(a * a for a in x)
        best = None                             # (dot, ny, target)
        for c in range(1, 8):
            off = (c >> 2) * fs + ((c >> 1) & 1) * hs + (c & 1)
            t = where.get(p - off)
            if off == 0 or t is None or t // tile != s // tile:
                continue
            y = vec[t]
            ny = sum(a * a for a in y)
            dot = sum(a * b for a, b in zip(x, y, strict=True))
            if not (nx > 0 and ny > 0 and dot > 0
                    and dot * dot * (1 << 2 * F) > theta_q * theta_q * nx * ny):
                continue
            if best is None or dot * dot * best[1] > best[0] * best[0] * ny:
                best = (dot, ny, t)
        if best is None:
            maps.append(len(firsts))
            firsts.append(s)
            members.append([s])
        else:
            maps.append(maps[best[2]])
            members[maps[best[2]]].append(s)
    if representative == "first":
        uniques = [vec[s] for s in firsts]
    else:
        uniques = []
        for group in members:
            c = len(group)
            mean = []
            for i in range(len(vec[0])):
                t = sum(vec[s][i] for s in group)
                mean.append((1 if t > 0 else -1) * ((2 * abs(t) + c) // (2 * c)) if t else 0)
            uniques.append(mean)
    return maps, uniques


def plain_focus(scores, tokens, keep, order, word_bits, fs, hs, theta_q, F, tile,
                representative, dim):
    R, M = len(scores), len(scores[0])
    s = [max(int(scores[r][j]) for r in range(R)) for j in range(M)]
    ranked = sorted(range(M), key=lambda j: (-s[j], j))
    mask = [False] * M
    for j in ranked[:keep]:
        mask[j] = True
    words, nbits = plain_code(mask, order, word_bits)
    kept = [j for j in range(M) if mask[j]]
    columns = len(tokens[0]) // dim
    maps, uniques = [], []
    for c in range(columns):
        mp, u = plain_match([tokens[j][c * dim:(c + 1) * dim] for j in kept], kept, fs, hs,
                            theta_q, F, tile, representative)
        maps.append(mp)
        uniques.append(u)
    return mask, words, nbits, maps, uniques


def _case(seed):
    rng = np.random.default_rng(seed)
    M = int(rng.integers(1, 40))
    R = int(rng.integers(1, 5))
    scores = rng.integers(0, int(rng.choice([3, 50, 60000])), (R, M))
    dim = int(rng.choice([2, 4]))
    protos = rng.integers(-20, 21, (3, 2 * dim))
    tokens = protos[rng.integers(0, 3, M)] + rng.integers(-2, 3, (M, 2 * dim))
    tokens[rng.random(M) < 0.1] = 0
    keep = int(rng.choice([0, 1, M // 2, M, M + 3]))
    order = None if seed % 3 == 0 else int(rng.integers(0, 8))
    fs, hs = int(rng.integers(0, 8)), int(rng.integers(0, 4))
    return dict(scores=scores, tokens=tokens, keep=keep, order=order,
                word_bits=int(rng.choice([8, 16, 32])), fs=fs, hs=hs,
                theta_q=int(rng.choice([0, 128, 230, 255])), F=8,
                tile=int(rng.choice([5, 16, 1024])),
                representative="mean" if seed % 2 else "first", dim=dim)


@pytest.mark.parametrize("seed", range(40))
def test_focus_equals_plain_composition(seed):
    c = _case(seed)
    mask, words, nbits, maps, uniques = golden.focus(
        c["scores"], c["tokens"], c["keep"], mode="temporal" if seed % 4 == 1 else "spatial",
        order=c["order"], word_bits=c["word_bits"], frame_stride=c["fs"], row_stride=c["hs"],
        theta_q=c["theta_q"], theta_bits=c["F"], tile=c["tile"], window=c["fs"] + c["hs"] + 2,
        representative=c["representative"], dim=c["dim"])
    want = plain_focus(c["scores"].tolist(), c["tokens"].tolist(), c["keep"], c["order"],
                       c["word_bits"], c["fs"], c["hs"], c["theta_q"], c["F"], c["tile"],
                       c["representative"], c["dim"])
    assert mask.tolist() == want[0]
    assert [int(w) for w in words] == want[1]
    assert nbits == want[2]
    n = sum(want[0])
    assert maps.shape == (n, len(want[3]))
    for j, (mp, u) in enumerate(zip(want[3], want[4], strict=True)):
        assert maps[:, j].tolist() == mp
        assert uniques[j].tolist() == u
        assert uniques[j].dtype == c["tokens"].dtype


def test_photo_job():
    """Importance from a query patch's attention over photograph tokens, D = 2V."""
    x, pos = golden.photo.photo_tokens(frames=2, grid=6, patch=4, dim=8)
    attention = golden.photo.photo_attention(frames=2, grid=6, patch=4, dim=8, queries=2)
    scores = golden.scores_from_fp16(attention.astype(np.float16))
    args = dict(frame_stride=36, row_stride=6, theta_q=golden.theta_q(0.9), tile=1024, dim=4)
    mask, words, nbits, maps, uniques = golden.focus(scores, x, 40, **args)
    want = plain_focus(scores.tolist(), x.tolist(), 40, None, 32, 36, 6, args["theta_q"], 8,
                       1024, "first", 4)
    assert mask.tolist() == want[0] and nbits == want[2]
    assert [maps[:, j].tolist() for j in range(2)] == want[3]
    assert np.flatnonzero(mask).tolist() == [p for p, k in zip(pos, mask, strict=True) if k]


@pytest.mark.parametrize("bad, message", [
    (dict(tokens=np.zeros((5, 8), int)), r"^tokens has 5 rows but scores has M = 6 columns"),
    (dict(tokens=np.zeros((6, 6), int)), r"dimension D = 6 must be a positive multiple of dim = 4"),
    (dict(keep=-1), r"^keep = -1 is out of range"),
    (dict(scores=-np.ones((2, 6), int)), r"^scores must be >= 0"),
    (dict(frame_stride=10), r"must be less than window = 12"),
    (dict(theta_q=256), r"theta_q"),
    (dict(order=8), r"^order must be"),
    (dict(representative="median"), r"^representative must be"),
])
def test_bad_input(bad, message):
    args = dict(scores=np.ones((2, 6), int), tokens=np.ones((6, 8), int), keep=3,
                frame_stride=2, row_stride=1, theta_q=200, window=12, dim=4)
    args.update(bad)
    with pytest.raises(ValueError, match=message):
        golden.focus(args.pop("scores"), args.pop("tokens"), args.pop("keep"), **args)
