"""Real data for SIC and SEC from the photograph that matplotlib ships (``grace_hopper.jpg``).

Video-like frames are made by panning (and optionally zooming) a crop over the photograph: frame f
samples the photo, bilinearly, at::

    y = cy_f + (i - (N-1)/2) * s_f,    x = cx_f + (j - (N-1)/2) * s_f,    N = grid * patch

where ``s_f = s / (1 + zoom * f)`` is the source pixels per output pixel, and the crop centre
``(cy_f, cx_f)`` moves by ``pan * s_f`` source pixels per frame (``pan`` is in output pixels),
reflecting off the photo's edges (the camera pans back and forth), so any number of frames fits.

Tokens are the frames' ``patch x patch x 3`` patches in (frame, row, column) order, so the token at
frame f, row r, column c has position ``f*grid*grid + r*grid + c``: FS = grid**2 and HS = grid are
the natural strides. Each patch is flattened, the mean over all patches of each feature is
subtracted, and a fixed seeded random projection (the same matrix for every ``seed``; ``seed`` only
moves the crop) maps it to ``dim`` features, which are quantized symmetrically per tensor with
``golden.formats.quantize``.
"""

import functools

import numpy as np

from .formats import quantize

__all__ = ["photo", "photo_frames", "photo_tokens", "photo_attention", "photo_positions"]

# Seed of the fixed random projection: the "patch embedding" is the same for every photo_* seed.
PROJECTION_SEED = 0x5EED_F0C5


@functools.lru_cache(maxsize=1)
def _photo():
    import matplotlib.cbook as cbook
    import matplotlib.image as mimage

    with cbook.get_sample_data("grace_hopper.jpg") as f:
        img = mimage.imread(f, format="jpg")
    img = np.asarray(img, dtype=np.float64)
    if img.max() > 1.0:
        img = img / 255.0
    img = img[..., :3]
    img.flags.writeable = False
    return img


def photo():
    """The photograph as float64 [600, 512, 3] in [0, 1] (read-only, cached)."""
    return _photo()


def _whole(value, name, low):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < low:
        raise ValueError(f"{name} must be an integer >= {low}, not {value!r}")
    return int(value)


def _reflect(t, low, high):
    """Fold t into [low, high] by reflection at both ends (a triangle wave)."""
    span = high - low
    if span <= 0:
        return np.full_like(t, low)
    u = np.mod(t - low, 2 * span)
    return low + np.where(u > span, 2 * span - u, u)


def _box_downsample(img, k):
    if k <= 1:
        return img
    h, w = img.shape[0] // k * k, img.shape[1] // k * k
    return img[:h, :w].reshape(h // k, k, w // k, k, -1).mean(axis=(1, 3))


def _bilinear(img, ys, xs):
    """img sampled at the grid ys x xs (1-D coordinates inside the image), [len(ys), len(xs), C]."""
    h, w = img.shape[:2]
    y0 = np.clip(np.floor(ys).astype(np.int64), 0, h - 2)
    x0 = np.clip(np.floor(xs).astype(np.int64), 0, w - 2)
    wy = np.clip(ys - y0, 0.0, 1.0)[:, None, None]
    wx = np.clip(xs - x0, 0.0, 1.0)[None, :, None]
    top = img[y0][:, x0] * (1 - wx) + img[y0][:, x0 + 1] * wx
    bottom = img[y0 + 1][:, x0] * (1 - wx) + img[y0 + 1][:, x0 + 1] * wx
    return top * (1 - wy) + bottom * wy


def photo_frames(frames=4, grid=14, patch=8, pan=(3, 2), seed=0, scale=3.0, zoom=0.0):
    """Video-like frames: a crop panned (and optionally zoomed) over the photograph.

    Parameters
    ----------
    frames, grid, patch : int
        Frame count and frame size: each frame is ``grid * patch`` pixels square.
    pan : (float, float)
        Motion of the crop per frame, (down, right), in output pixels.
    seed : int
        Picks the crop's starting centre (deterministic).
    scale : float
        Source pixels per output pixel in frame 0 (>= 1 thins the photo down; it is box-filtered
        by ``floor(scale)`` first, so there is no aliasing).
    zoom : float
        Zoom-in per frame, >= 0: ``s_f = scale / (1 + zoom * f)``.

    Returns
    -------
    float64 array [frames, grid*patch, grid*patch, 3], values in [0, 1].
    """
    frames = _whole(frames, "frames", 1)
    grid = _whole(grid, "grid", 1)
    patch = _whole(patch, "patch", 1)
    seed = _whole(seed, "seed", 0)
    pan = np.asarray(pan, dtype=np.float64)
    if pan.shape != (2,) or not np.all(np.isfinite(pan)):
        raise ValueError(f"pan must be two finite numbers (down, right), not {pan!r}")
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite number > 0, not {scale!r}")
    if not (np.isfinite(zoom) and zoom >= 0):
        raise ValueError(f"zoom must be a finite number >= 0, not {zoom!r}")
    k = max(1, int(np.floor(scale)))
    img = _box_downsample(photo(), k)
    size = grid * patch
    s0 = scale / k                                   # in downsampled pixels per output pixel
    half = (size - 1) / 2 * s0                       # the crop's half-span at frame 0 (largest)
    h, w = img.shape[:2]
    if 2 * half > h - 1 or 2 * half > w - 1:
        raise ValueError(f"a {size}-pixel frame at scale {scale} spans {2 * half * k + k:.0f} "
                         f"photo pixels and does not fit in the {photo().shape[0]}x"
                         f"{photo().shape[1]} photograph: reduce grid, patch or scale")
    lo_y, hi_y, lo_x, hi_x = half, h - 1 - half, half, w - 1 - half
    rng = np.random.default_rng(seed)
    cy0, cx0 = rng.uniform(lo_y, hi_y), rng.uniform(lo_x, hi_x)
    out = np.empty((frames, size, size, 3))
    offsets = np.arange(size) - (size - 1) / 2
    cy, cx = cy0, cx0
    for f in range(frames):
        s_f = s0 / (1 + zoom * f)
        out[f] = _bilinear(img, _reflect(np.float64(cy), lo_y, hi_y) + offsets * s_f,
                           _reflect(np.float64(cx), lo_x, hi_x) + offsets * s_f)
        cy, cx = cy + pan[0] * s_f, cx + pan[1] * s_f
    return np.clip(out, 0.0, 1.0)


def photo_positions(frames=4, grid=14):
    """Positions ``f*grid*grid + r*grid + c`` of every token, in (frame, row, column) order."""
    f, r, c = np.meshgrid(np.arange(frames), np.arange(grid), np.arange(grid), indexing="ij")
    return (f * grid * grid + r * grid + c).reshape(-1).astype(np.int64)


def _features(frames, grid, patch, dim, seed, pan, scale, zoom):
    """Projected float features [S, dim] of the frames' patches (before quantization)."""
    dim = _whole(dim, "dim", 1)
    video = photo_frames(frames, grid, patch, pan=pan, seed=seed, scale=scale, zoom=zoom)
    x = video.reshape(frames, grid, patch, grid, patch, 3).transpose(0, 1, 3, 2, 4, 5)
    x = x.reshape(frames * grid * grid, patch * patch * 3)
    x = x - x.mean(axis=0, keepdims=True)
    proj = np.random.default_rng(PROJECTION_SEED).standard_normal((x.shape[1], dim))
    return x @ (proj / np.sqrt(x.shape[1]))


def photo_tokens(frames=4, grid=14, patch=8, dim=32, elem_bits=8, seed=0, pan=(3, 2),
                 scale=3.0, zoom=0.0):
    """Quantized tokens of panned photo frames, for SIC.

    ``vectors = quantize(center(patches) @ P, elem_bits=elem_bits)``, with ``P`` a fixed
    Gaussian projection [3*patch**2, dim] / sqrt(3*patch**2) (seeded by ``PROJECTION_SEED``) and
    ``center`` the subtraction of each feature's mean over all patches.

    Returns
    -------
    vectors : int8 (elem_bits <= 8) or int16 array [S, dim], S = frames * grid**2
    positions : int64 array [S], ``f*grid*grid + r*grid + c``
    """
    y = _features(frames, grid, patch, dim, seed, pan, scale, zoom)
    return quantize(y, elem_bits=elem_bits), photo_positions(frames, grid)


def photo_attention(frames=4, grid=14, patch=8, dim=32, queries=1, temperature=1.0, seed=0,
                    pan=(3, 2), scale=3.0, zoom=0.0):
    """Attention probabilities of query patches over every token: importance-like scores.

    With ``y`` the projected features of :func:`photo_tokens` (float, before quantization),
    normalised to unit standard deviation, and ``q_r`` the features of ``queries`` tokens picked
    by ``seed``::

        I[r, j] = softmax_j(y_j . q_r / (sqrt(dim) * temperature))

    Returns
    -------
    float64 array [queries, S]: each row sums to 1, every value is in [0, 1]. These are attention
    rows for SEC: ``golden.importance(golden.scores_from_fp16(I))``.
    """
    queries = _whole(queries, "queries", 1)
    if not (np.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a finite number > 0, not {temperature!r}")
    y = _features(frames, grid, patch, dim, seed, pan, scale, zoom)
    y = y / max(float(y.std()), np.finfo(np.float64).tiny)
    count = y.shape[0]
    pick = np.random.default_rng(seed).choice(count, size=queries, replace=queries > count)
    logits = y[pick] @ y.T / (np.sqrt(y.shape[1]) * temperature)
    logits -= logits.max(axis=1, keepdims=True)
    e = np.exp(logits)
    return e / e.sum(axis=1, keepdims=True)
