"""The one parameter object of the Focus unit (spec section 1).

:class:`FocusParams` is shared by the RTL, the golden model, the simulation drivers, the boards and
the tests. Every derived width is a property here and is computed nowhere else.
"""

from dataclasses import asdict, dataclass, fields, replace
from numbers import Integral

__all__ = ["FocusParams", "ceil_log2", "check_limit"]


def ceil_log2(n):
    """Smallest ``w`` with ``2**w >= n`` (0 for n <= 1)."""
    n = int(n)
    return (n - 1).bit_length() if n > 1 else 0


# field -> (low, high) for the integer fields; every bound is inclusive.
_INT_RANGES = {
    "tokens":      (1, 65536),
    "lanes":       (1, 64),
    "score_bits":  (1, 32),
    "word_bits":   (8, 64),
    "dim":         (1, 256),
    "elem_bits":   (2, 16),
    "theta_bits":  (1, 16),
    "layers":      (1, 256),
    "window":      (4, 4096),
    "tile":        (1, 65536),
    "comparators": (1, 7),
    "scatter_rows": (1, 64),
}


def check_scores_fit(params, scores, what="scores"):
    """``ValueError`` unless the importance scores ``scores`` (int [R, M]) fit the unit built for
    ``params``: M at most ``params.tokens`` (the importance buffer's size), every score within
    ``params.score_bits``. ``what`` names the argument in the message."""
    M = scores.shape[-1]
    if M > params.tokens:
        raise ValueError(f"M = {M} > tokens = {params.tokens}: the importance buffer holds at most "
                         f"tokens scores")
    if scores.size and int(scores.max()) >> params.score_bits:
        raise ValueError(f"{what} must fit in score_bits = {params.score_bits} bits: the largest "
                         f"is {int(scores.max())}")


def check_limit(field, value, argument=None):
    """``value`` as an int when it is within the range of the :class:`FocusParams` integer field
    ``field``, else ``ValueError`` naming the user's ``argument`` (default: the field), the value
    and the RTL's range: ``M = 70000 is out of the RTL's range [1, 65536] (FocusParams.tokens)``.

    For the drivers that fit parameters to a job: a value golden accepts but the RTL cannot build
    is reported as what the user passed, not as a FocusParams value made from it."""
    low, high = _INT_RANGES[field]
    if not low <= value <= high:
        raise ValueError(f"{argument or field} = {value} is out of the RTL's range "
                         f"[{low}, {high}] (FocusParams.{field})")
    return int(value)


_CHOICES = {
    "sorter": ("bubble", "radix"),
    "gating": ("enable", "icg"),
    "representatives": ("first+mean", "first"),
    "offset_schemes": ("all", "kept-exp-golomb"),
}


@dataclass(frozen=True)
class FocusParams:
    """Build-time parameters of the Focus unit.

    Parameters
    ----------
    tokens : int
        M_max, image tokens per SEC job; the depth of the importance buffer. 1 to 65536.
    lanes : int
        a, scores per beat into SEC and the length of the bubble chain. 1 to 64.
    score_bits : int
        Width of an unsigned importance score. 1 to 32 (16 carries fp16 bit patterns).
    sorter : str
        ``"bubble"`` (the paper's pipelined a-way bubble sorter) or ``"radix"``.
    word_bits : int
        Width of an offset-code word. 8 to 64.
    dim : int
        V, signed elements per SIC sub-vector. 1 to 256.
    elem_bits : int
        Width of a signed sub-vector element. 2 to 16.
    theta_bits : int
        F, fraction bits of the similarity threshold theta = theta_q / 2**F. 1 to 16.
    layers : int
        Entries in the per-layer threshold table. 1 to 256.
    window : int
        SIC look-back in tokens (the layouter's capacity). 4 to 4096.
    tile : int
        SIC tile: tokens per tile. 1 to 65536.
    comparators : int
        Pair scorers (dot-product units) working in parallel in the SIC block matcher: a token
        takes ``ceil(7 / comparators)`` cycles. 1 to 7 (see the provisioning note below).
    gating : str
        ``"enable"`` (clock enables) or ``"icg"`` (clock-gate cell instances).
    representatives : str
        The SIC unique-vector representatives the block matcher is built for: ``"first+mean"``
        (both; the default) or ``"first"``. ``"first"`` leaves out everything only ``mean``
        needs: the tile-deep memory of group sums (``tile * (dim * (elem_bits +
        bit_length(tile)) + bit_length(tile))`` bits, 619 kbit at the default shape), its
        adders and the mean divider. A job asking for ``mean`` is then rejected (the matcher's
        ``error`` flag, cause ``MatchError.MEAN``), and ``sim.block_match(...,
        representative="mean")`` raises ``ValueError``.
    scatter_rows : int
        Rows of ``dim`` partial sums the Focus GEMM's scatter stage adds per cycle (the paper's 64
        accumulators are 2 rows of 32). 1 to 64. The GEMM's array is ``dim`` x ``dim`` and its
        output tile ``tile`` rows (:class:`rtl.tile.focus_gemm.FocusGemm`).
    offset_schemes : str
        The offset-code schemes the SEC encoder is built with (spec 3.3): ``"all"`` (the 32:
        kept or dropped set, Exp-Golomb or Rice, orders 0..7; the default) or
        ``"kept-exp-golomb"`` (the kept set in Exp-Golomb, orders 0..7 only: the encoder before
        the dropped set and Rice were added). ``"kept-exp-golomb"`` builds 8 bit counters instead
        of 32 and an emitter without the dropped-set walk and the Rice codes; its adaptive
        choice is the best of the 8 (``golden.encode_offsets(..., schemes=...)``), and a fixed
        scheme with the dropped set or Rice is rejected (the encoder's ``error``, cause
        ``EncodeError.SCHEME``; ``ValueError`` in golden and sim). The header format is the same
        (s = 0, f = 0), and the decoders read every scheme whatever this is.

    Provisioning (``comparators``, ``representatives``), the paper's argument: the matcher takes
    ``rounds = ceil(7 / comparators)`` cycles per sub-vector (the paper's one cosine unit: 8).
    Behind a 32x32 array that computes a 32x32 output tile in K cycles (K, the GEMM's reduction
    length), a tile brings 32 sub-vectors of V = 32 per column, so the matcher keeps up while
    ``32 * rounds <= K``: with one comparator K >= 224 (the paper's 8 cycles: K >= 256). The
    GEMMs whose outputs SIC compresses reduce over the model's hidden or FFN size, far beyond
    that, so the default and paper presets have one comparator. More comparators pay for
    themselves only for K < 224 (7 comparators: one sub-vector per cycle, K >= 32); they cost
    a dot-product unit each, and one window read port each. The paper preset also leaves the
    exact ``mean`` out (``representatives = "first"``): the paper's area counts no group-sum
    memory (its representative update is an approximate running average), and the default
    keeps both representatives.

    Integer fields take any ``numbers.Integral`` but ``bool`` (NumPy integers too) and store it as
    a plain ``int``. Bad values raise ``ValueError`` (``TypeError`` for a value of the wrong type);
    the message names the field, the value and the allowed range.
    """

    tokens: int = 1024
    lanes: int = 4
    score_bits: int = 16
    sorter: str = "bubble"
    word_bits: int = 32
    dim: int = 32
    elem_bits: int = 8
    theta_bits: int = 8
    layers: int = 32
    window: int = 256
    tile: int = 1024
    comparators: int = 1
    gating: str = "enable"
    representatives: str = "first+mean"
    scatter_rows: int = 2
    offset_schemes: str = "all"

    def __post_init__(self):
        for name, (low, high) in _INT_RANGES.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Integral):
                raise TypeError(f"FocusParams.{name} must be an integer, not {value!r}")
            value = int(value)                  # a NumPy integer is stored as a plain int
            object.__setattr__(self, name, value)
            if not low <= value <= high:
                raise ValueError(
                    f"FocusParams.{name} = {value!r} is out of range: it must be in "
                    f"[{low}, {high}]")
        for name, choices in _CHOICES.items():
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"FocusParams.{name} must be a string, not {value!r}")
            if value not in choices:
                allowed = " or ".join(repr(c) for c in choices)
                raise ValueError(f"FocusParams.{name} = {value!r} is not allowed: it must be "
                                 f"{allowed}")

    # ---- presets --------------------------------------------------------------------------------

    @classmethod
    def paper(cls):
        """The paper's shape: M = 1024, a = 32, V = 32, one comparator, window 256, tile 1024,
        only the ``first`` representative (the paper's area has no group-sum memory) and only
        the paper's offset code (``offset_schemes = "kept-exp-golomb"``: its VLI lists the kept
        tokens in order-e Exp-Golomb; the dropped set and Rice are this project's additions)."""
        return cls(tokens=1024, lanes=32, dim=32, comparators=1, window=256, tile=1024,
                   representatives="first", offset_schemes="kept-exp-golomb")

    @classmethod
    def board(cls):
        """For the boards: 256 tokens, 2 lanes, V = 8, 2 comparators, 16-bit code words. The
        iCE40 UP5K (iCEBreaker) holds its SEC, not the whole unit (more than 3 times the device,
        as measured before the block matcher was sized to its rate), and only with
        ``offset_schemes = "kept-exp-golomb"``, which ``boards.top.board_params`` sets for it
        (91 % of the logic cells with the UART bridge; all 32 offset schemes need 118 %); the
        ULX3S's ECP5 holds it all, with every scheme. Two comparators
        (4 cycles per sub-vector) although one would keep up (see the class docstring): the
        board exercises the multi-lane selection on hardware, and at V = 8 it costs little."""
        return cls(tokens=256, lanes=2, dim=8, layers=8, window=64, tile=256, comparators=2,
                   word_bits=16)

    @classmethod
    def preset(cls, name):
        """``"default"``, ``"paper"`` or ``"board"``."""
        presets = {"default": cls, "paper": cls.paper, "board": cls.board}
        if name not in presets:
            raise ValueError(f"Unknown preset {name!r}: it must be one of {', '.join(presets)}")
        return presets[name]()

    def replace(self, **changes):
        """A copy with some fields changed (validated like the constructor)."""
        return replace(self, **changes)

    def with_overrides(self, assignments):
        """A copy with ``"field=value"`` strings applied, as given to ``--set`` on the command line.

        Integers are parsed for integer fields; unknown fields and unparsable values raise
        ``ValueError``.
        """
        changes = {}
        names = {f.name for f in fields(self)}
        for item in assignments:
            if "=" not in item:
                raise ValueError(f"Override {item!r} is not of the form field=value")
            name, text = (part.strip() for part in item.split("=", 1))
            if name not in names:
                raise ValueError(f"Unknown FocusParams field {name!r}: fields are "
                                 f"{', '.join(sorted(names))}")
            if name in _INT_RANGES:
                try:
                    changes[name] = int(text, 0)
                except ValueError:
                    raise ValueError(f"FocusParams.{name} = {text!r} is not an integer") from None
            else:
                changes[name] = text
        return self.replace(**changes)

    def to_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, d):
        return cls(**d)

    # ---- derived widths: computed here and nowhere else -----------------------------------------

    @property
    def tag(self):
        """A short unique name for build directories, test ids and module names."""
        return (f"M{self.tokens}_a{self.lanes}_s{self.score_bits}_{self.sorter}_w{self.word_bits}"
                f"_V{self.dim}_e{self.elem_bits}_F{self.theta_bits}_L{self.layers}"
                f"_W{self.window}_T{self.tile}_c{self.comparators}_{self.gating}"
                f"_{'fm' if self.mean_unit else 'f'}_r{self.scatter_rows}"
                f"{'' if self.offset_schemes == 'all' else '_keg'}")

    @property
    def mean_unit(self):
        """Whether the block matcher has the ``mean`` representative's sums and divider."""
        return self.representatives == "first+mean"

    @property
    def index_bits(self):
        """Bits of a token index 0 .. tokens-1 (at least 1)."""
        return max(1, ceil_log2(self.tokens))

    @property
    def count_bits(self):
        """Bits of a token count 0 .. tokens (bit_length(tokens)); also the job's M field."""
        return self.tokens.bit_length()

    @property
    def order_bits(self):
        """Bits of the Exp-Golomb order in the offset-code header (spec 3.3): 3."""
        return 3

    @property
    def code_header_bits(self):
        """Bits of the offset-code header at M = ``tokens`` (spec 3.3): the order (3), the coded
        set and the family (1 each), the count (bit_length(tokens))."""
        return self.order_bits + 2 + self.count_bits

    @property
    def nbits_bits(self):
        """Bits of ``nbits``, the offset-code length, for the worst case of any job and scheme."""
        # Any scheme, either set: at most tokens codes, an Exp-Golomb code of at most
        # 2*index_bits + 8 bits; a Rice string at most tokens + 8*tokens bits (its quotients sum
        # to at most the gaps' sum); plus the header. Bounded above by header + tokens * (2*index
        # + 8) (index_bits >= 1).
        worst = self.code_header_bits + self.tokens * (2 * self.index_bits + 8)
        return worst.bit_length()

    @property
    def theta_max(self):
        """Largest theta_q: 2**F - 1."""
        return (1 << self.theta_bits) - 1

    @property
    def elem_max(self):
        """Largest magnitude of a sub-vector element: 2**(elem_bits-1) (for the most negative)."""
        return 1 << (self.elem_bits - 1)

    @property
    def norm_bits(self):
        """Unsigned bits of a squared norm sum(x*x): exact for any V elements."""
        return (self.dim * self.elem_max * self.elem_max).bit_length()

    @property
    def dot_bits(self):
        """Signed bits of a dot product sum(x*y): exact for any V elements."""
        return (self.dim * self.elem_max * self.elem_max).bit_length() + 1

    @property
    def dot_sq_bits(self):
        """Unsigned bits of dot**2 for a positive dot: dot <= sqrt(nx * ny) <= dim * elem_max**2
        (Cauchy-Schwarz), so ``bit_length((dim * elem_max**2)**2)``."""
        return ((self.dim * self.elem_max * self.elem_max) ** 2).bit_length()

    @property
    def token_threshold_bits(self):
        """Unsigned bits of theta_q**2 * nx, the per-token factor of the similarity test."""
        return 2 * self.theta_bits + self.norm_bits

    @property
    def lhs_bits(self):
        """Unsigned bits of dot**2 * 2**(2F), the left side of the similarity test."""
        return 2 * (self.dot_bits - 1) + 2 * self.theta_bits

    @property
    def rhs_bits(self):
        """Unsigned bits of theta_q**2 * nx * ny, the right side of the similarity test."""
        return 2 * self.theta_bits + 2 * self.norm_bits

    @property
    def layer_bits(self):
        return max(1, ceil_log2(self.layers))

    @property
    def window_bits(self):
        """Bits of a look-back distance 0 .. window-1."""
        return max(1, ceil_log2(self.window))

    @property
    def position_bits(self):
        """Bits of a SIC token position (32: positions are global, not tile-local)."""
        return 32

    @property
    def code_words(self):
        """Depth of the Focus unit's code memory: the longest offset code of any job, in words.

        The unit's SEC codes the kept set with Exp-Golomb, at a fixed order or adaptively (the
        adaptive scheme is never longer than the kept set's Exp-Golomb code at order 7). A kept
        token costs at most 8 bits there (order 7, gap 0; a longer code covers more tokens), so
        the string is at most ``8*tokens + code_header_bits`` bits."""
        return -(-(8 * self.tokens + self.code_header_bits) // self.word_bits)

    # ---- the Focus GEMM (rtl/tile/focus_gemm.py) -------------------------------------------------

    @property
    def gemm_index_bits(self):
        """Bits of a map entry: a unique vector's index 0 .. tile-1 within an output tile."""
        return max(1, ceil_log2(self.tile))

    @property
    def gemm_words(self):
        """Depth of the GEMM's accumulation buffer: ceil(tile / scatter_rows) words of
        ``scatter_rows`` rows."""
        return -(-self.tile // self.scatter_rows)

    @property
    def gemm_out_bits(self):
        """Width of the GEMM's signed accumulation buffer and results: 32 (int32)."""
        return 32
