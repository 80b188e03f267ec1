"""A float64 model of the paper's algorithm (spec 6), written independently of the exact model.

The exact model (``golden.similarity``, ``golden.block_match``) decides cos(x, y) > theta with
integers and no rounding. This module decides the same things in floating point, the way the
paper's fp16 datapath does (here in float64)::

    cosine(x, y) = sum(x*y) / sqrt(sum(x*x) * sum(y*y))     (0 when a norm is 0)
    similar(x, y, theta) = cosine(x, y) > theta

so that benchmarks can measure how often the 8-bit exact decisions agree with floating point on
real data. Importance and top-k work on float scores. Inputs may be float or integer arrays.
"""

import numpy as np

__all__ = ["cosine", "similar", "importance", "topk_mask", "block_match", "sic"]


def _real(a, name):
    a = np.asarray(a)
    if a.dtype == bool or not (np.issubdtype(a.dtype, np.integer)
                               or np.issubdtype(a.dtype, np.floating)):
        raise ValueError(f"{name} must be a real (integer or float) array, not dtype {a.dtype}")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    return a


def _theta(theta):
    if isinstance(theta, bool) or not isinstance(theta, (int, float, np.integer, np.floating)):
        raise ValueError(f"theta must be a real number, not {theta!r}")
    if not 0.0 <= float(theta) < 1.0:
        raise ValueError(f"theta = {theta} is out of range: it must be in [0, 1)")
    return float(theta)


def _whole(value, name, low):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < low:
        raise ValueError(f"{name} must be an integer >= {low}, not {value!r}")
    return int(value)


def cosine(x, y):
    """Cosine over the last axis, broadcasting leading dims, in float64.

    cos(x, y) = sum(x*y) / sqrt(sum(x*x) * sum(y*y)); 0 where either norm is 0.
    """
    x = _real(x, "x")
    y = _real(y, "y")
    if x.ndim < 1 or y.ndim < 1 or x.shape[-1] != y.shape[-1]:
        raise ValueError(f"x and y must have the same last axis (V): shapes {x.shape}, {y.shape}")
    num = np.sum(x * y, axis=-1)
    den = np.sqrt(np.sum(x * x, axis=-1) * np.sum(y * y, axis=-1))
    num, den = np.broadcast_arrays(num, den)
    out = np.zeros(num.shape)
    np.divide(num, den, out=out, where=den > 0)
    return out


def similar(x, y, theta):
    """cosine(x, y) > theta in float64, over the last axis; theta in [0, 1)."""
    return np.asarray(cosine(x, y) > _theta(theta), dtype=bool)


def importance(scores):
    """s[j] = max over rows r of scores[r, j], as float64; scores is [R, M] with R >= 1."""
    a = _real(scores, "scores")
    if a.ndim != 2 or a.shape[0] < 1:
        raise ValueError(f"scores must be a 2-D array [R, M] with R >= 1, not shape {a.shape}")
    return a.max(axis=0)


def topk_mask(s, keep):
    """Keep mask of the ``keep`` first tokens by score descending, then index ascending.

    keep >= M keeps every token; keep = 0 keeps none. Returns bool [M].
    """
    s = _real(s, "s")
    if s.ndim != 1:
        raise ValueError(f"s must be a 1-D array [M], not shape {s.shape}")
    keep = _whole(keep, "keep", 0)
    vals = s.tolist()
    order = sorted(range(len(vals)), key=lambda j: (-vals[j], j))
    mask = np.zeros(s.shape[0], dtype=bool)
    mask[order[:keep]] = True
    return mask


def _check_job(vectors, positions, frame_stride, row_stride, tile, window, representative):
    fs = _whole(frame_stride, "frame_stride", 0)
    hs = _whole(row_stride, "row_stride", 0)
    tile = _whole(tile, "tile", 1)
    window = _whole(window, "window", 1)
    if fs + hs + 1 >= window:
        raise ValueError(f"frame_stride + row_stride + 1 = {fs + hs + 1} must be less than "
                         f"window = {window}")
    if representative not in ("first", "mean"):
        raise ValueError(f"representative must be 'first' or 'mean', not {representative!r}")
    v = np.asarray(vectors)
    if v.ndim != 2 or v.shape[1] < 1:
        raise ValueError(f"vectors must be a 2-D array [S, V] with V >= 1, not shape {v.shape}")
    v = _real(v, "vectors")
    p = np.asarray(positions)
    if p.dtype == bool or not np.issubdtype(p.dtype, np.integer):
        raise ValueError(f"positions must be an integer array, not dtype {p.dtype}")
    if p.shape != (v.shape[0],):
        raise ValueError(f"positions must have shape ({v.shape[0]},), not {p.shape}")
    p = [int(t) for t in p]
    for i, t in enumerate(p):
        if t < 0:
            raise ValueError(f"positions must be >= 0: positions[{i}] = {t}")
        if i and t <= p[i - 1]:
            raise ValueError(f"positions must be strictly increasing: positions[{i}] = {t} is "
                             f"not greater than positions[{i - 1}] = {p[i - 1]}")
    return v, p, fs, hs, tile


def block_match(vectors, positions, *, frame_stride, row_stride, theta, tile=1024, window=256,
                representative="first"):
    """Block matching with float cosine decisions: same candidates as the exact model.

    Candidate c = 1..7 of the token at position p is the token of the same tile at position
    p - (f*FS + dh*HS + dw) (f = c >> 2, dh = (c >> 1) & 1, dw = c & 1; offset 0 never exists),
    when its vector is not zero. The token matches the candidate with cosine > theta and the
    largest cosine; ties go to the smaller c.

    Returns
    -------
    map : int64 array [S]
    uniques : float64 array [U, V]
        ``"first"``: the group's first vector; ``"mean"``: the plain float mean of the group.
    """
    theta = _theta(theta)
    v, p, fs, hs, tile = _check_job(vectors, positions, frame_stride, row_stride, tile, window,
                                    representative)
    count, width = v.shape
    nonzero = np.any(v != 0, axis=1)
    offsets = [(c >> 2) * fs + ((c >> 1) & 1) * hs + (c & 1) for c in range(1, 8)]
    # Gather (token, candidate, c) triples with a dict per tile, then one vectorised cosine.
    who, cand, cnum = [], [], []
    for start in range(0, count, tile):
        where = {p[i]: i for i in range(start, min(start + tile, count))}
        for s in range(start, min(start + tile, count)):
            for c, off in enumerate(offsets, 1):
                j = where.get(p[s] - off) if off > 0 else None
                if j is not None and nonzero[j]:
                    who.append(s)
                    cand.append(j)
                    cnum.append(c)
    cos = cosine(v[who], v[cand]) if who else np.zeros(0)
    best = [None] * count                          # (cosine, -c, candidate index)
    for s, j, c, cs in zip(who, cand, cnum, cos.tolist(), strict=True):
        if cs > theta and (best[s] is None or (cs, -c) > best[s][:2]):
            best[s] = (cs, -c, j)
    mp = np.zeros(count, dtype=np.int64)
    members = []
    for s in range(count):
        if best[s] is None:
            mp[s] = len(members)
            members.append([s])
        else:
            mp[s] = mp[best[s][2]]
            members[mp[s]].append(s)
    if representative == "first":
        uniques = np.array([v[g[0]] for g in members]).reshape(len(members), width)
    else:
        uniques = np.array([v[g].mean(axis=0) for g in members]).reshape(len(members), width)
    return mp, uniques


def sic(tokens, positions, *, frame_stride, row_stride, theta, tile=1024, window=256,
        representative="first", dim=32):
    """Float SIC over whole tokens [S, D]: D/dim independent columns, each :func:`block_match`.

    Returns (maps int64 [S, D/dim], list of D/dim float64 unique arrays).
    """
    dim = _whole(dim, "dim", 1)
    t = np.asarray(tokens)
    if t.ndim != 2 or t.shape[1] == 0 or t.shape[1] % dim:
        raise ValueError(f"tokens must be [S, D] with D a positive multiple of dim = {dim}, "
                         f"not shape {t.shape}")
    maps, uniques = [], []
    for j in range(t.shape[1] // dim):
        m, u = block_match(t[:, j * dim:(j + 1) * dim], positions, frame_stride=frame_stride,
                           row_stride=row_stride, theta=theta, tile=tile, window=window,
                           representative=representative)
        maps.append(m)
        uniques.append(u)
    return np.stack(maps, axis=1).astype(np.int64), uniques
