"""The radix selector of the top-k selector (spec 3.2, ``sorter="radix"``)."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal

from ..block import FocusBlock
from .topk_engine import TopKEngineSignature, add_sweeper, or_tree

__all__ = ["RadixSelector", "radix_digits"]

#: Bits per radix digit (16 histogram bins).
DIGIT_BITS = 4

#: Lanes per group of the histogram's first adder trees.
GROUP = 8


def radix_digits(p):
    """Histogram passes: ceil(score_bits / 4)."""
    return -(-p.score_bits // DIGIT_BITS)


def _tree_sum(terms):
    terms = list(terms)
    if not terms:
        return Const(0, 1)
    while len(terms) > 1:
        pairs = [terms[i] + terms[i + 1] for i in range(0, len(terms) - 1, 2)]
        terms = pairs + ([terms[-1]] if len(terms) % 2 else [])
    return terms[0]


def _prefix_counts(m, bits):
    """Exclusive prefix popcounts of ``bits`` (count of set bits below each position), by a
    log-depth (Kogge-Stone) scan. Every node is a signal: a node feeds two nodes of the next level,
    so nested expressions would double at every level in the emitted Verilog."""
    width = len(bits).bit_length()
    counts = list(bits)                  # inclusive counts
    d = 1
    while d < len(bits):
        nodes = []
        for n in range(len(bits)):
            if n >= d:
                node = Signal(width, name=f"ties_l{d}_{n}")
                m.d.comb += node.eq(counts[n] + counts[n - d])
                nodes.append(node)
            else:
                nodes.append(counts[n])
        counts = nodes
        d *= 2
    return [Const(0, 1)] + counts[:-1]


class RadixSelector(FocusBlock):
    """Radix selection as a :class:`rtl.sec.topk_selector.TopKEngineSignature` engine: the k-th
    largest score T and how many of its ties to keep, found 4 bits at a time, then the mask.

    Histogram pass d (d = 0 is the most significant digit; scores are zero-extended to a whole
    number of digits) reads the vector ``lanes`` scores per cycle. A score is a candidate when its
    digits above d equal the digits of T found so far; the pass counts, for each digit value b,
    the candidates whose digit d is >= b (cumulative bins, so no prefix sum is needed afterwards).
    T's digit d is the largest b with count(>= b) >= r, where r (starting at k) is the number of
    tokens still to keep among the candidates; then r -= count(>= b+1). After
    ceil(score_bits/4) passes, T is known and r ties at T remain to be kept. The mask pass keeps
    every score > T and the first r scores == T in index order (a prefix count over the lanes of a
    beat, and a running count over beats). k = 0 gives r = 0 and T = the all-ones digit string,
    so nothing is kept; k = M gives T = the smallest score and keeps its ties.

    Latency and throughput, no stalls and all words available: each pass reads one word per
    cycle; between passes 4 cycles pass (the last word's three histogram stages: digit and
    candidacy, the bins' counts, their accumulation; then choosing the digit in two steps, while
    the next pass's first word waits in the sweeper's register), and a mask beat leaves 4 cycles
    after its word is in the read port (the sweeper's register, the compare with T, the tie
    counts, the output register). The cycle count does not depend on k. A pass can follow the
    loader (words are read once available). ``o_stream`` back-pressure holds only the mask pass.
    """

    def __init__(self, params):
        super().__init__(params, TopKEngineSignature)

    def elaborate(self, platform):
        p = self._params
        a, sb = p.lanes, p.score_bits
        D = radix_digits(p)
        W = D * DIGIT_BITS
        bins = 1 << DIGIT_BITS
        m = Module()
        o = self.o_stream
        sw = add_sweeper(m, self)

        # Issue side: D histogram sweeps, then the mask sweep.
        isweep = Signal(range(D + 1))
        m.d.comb += sw.final.eq(isweep == D)
        with m.If(sw.wrap & ~sw.final):
            m.d.sync += isweep.eq(isweep + 1)

        def score(n):
            return Cat(sw.w_data.scores[n], Const(0, W - sb))

        pos = Signal(range(D))           # digit being counted, from D-1 (the top) down
        prefix = Signal(W)               # T's digits found so far (0 below)
        hi_mask = Signal(W)              # the bits of those digits
        rem = Signal(p.count_bits)       # tokens still to keep among the candidates
        cge = [Signal(p.count_bits, name=f"cge{b}") for b in range(bins)]
        cond = Signal(bins)
        hold = Signal()                  # the sweep's last word is in; wait for the digit

        take_hist = Signal()
        take_mask = Signal()
        m.d.comb += sw.take.eq(take_hist | take_mask)

        # Histogram stage 1: digit and candidacy per lane.
        s1_valid = Signal()
        s1_last = Signal()
        dig = [Signal(DIGIT_BITS, name=f"dig{n}") for n in range(a)]
        cand = [Signal(name=f"cand{n}") for n in range(a)]
        m.d.sync += [s1_valid.eq(take_hist), s1_last.eq(take_hist & sw.w_last)]
        with m.If(take_hist):
            for n in range(a):
                m.d.sync += [
                    dig[n].eq(score(n).word_select(pos, DIGIT_BITS)),
                    cand[n].eq(sw.w_lanes[n] & (((score(n) ^ prefix) & hi_mask) == 0)),
                ]
        # Histogram stage 2: each bin's count of the word in each group of up to 8 lanes (adder
        # trees); stage 3 adds the groups' counts to the cumulative bin (so the lanes' tree and
        # the accumulator are not in series).
        s2_valid = Signal()
        s2_last = Signal()
        groups = range(0, a, GROUP)
        hcount = [[Signal(range(min(GROUP, a - g) + 1), name=f"hcount{b}_{g // GROUP}")
                   for g in groups] for b in range(bins)]
        m.d.sync += [s2_valid.eq(s1_valid), s2_last.eq(s1_last)]
        with m.If(s1_valid):
            for b in range(bins):
                # Bin 0 counts every candidate (no ">= 0" compare, which lints as constant).
                hits = [cand[n] & (dig[n] >= b) if b else cand[n] for n in range(a)]
                m.d.sync += [hcount[b][k].eq(_tree_sum(hits[g:g + GROUP]))
                             for k, g in enumerate(groups)]
        s3_last = Signal()
        m.d.sync += s3_last.eq(s2_last)
        with m.If(s2_valid):
            for b in range(bins):
                m.d.sync += cge[b].eq(cge[b] + _tree_sum(hcount[b]))

        # Mask pipeline: stage 1 compares with T, stage 2 counts the ties below each lane and in
        # the beat, stage 3 (the output register) keeps the ties there is room for.
        m1_valid = Signal()
        m1_last = Signal()
        m1_gt = Signal(a)
        m1_eq = Signal(a)
        m2_valid = Signal()
        m2_last = Signal()
        m2_gt = Signal(a)
        m2_eq = Signal(a)
        m2_before = [Signal(range(a + 1), name=f"m2_before{n}") for n in range(a)]
        m2_ties = Signal(range(a + 1))
        room = Signal(p.count_bits)
        advance = ~o.valid | o.ready

        # The digit of a finished pass. cond is a thermometer code (cge falls with b): the digit
        # is where it ends, and the candidates above the digit are cge[digit + 1]; one-hot
        # AND-OR selects keep this a few LUT levels deep.
        edge = [cond[b] & ~cond[b + 1] for b in range(bins - 1)] + [cond[bins - 1]]
        digit = Signal(DIGIT_BITS)
        above = Signal(p.count_bits)
        m.d.comb += [
            digit.eq(or_tree(Mux(edge[b], b, 0) for b in range(1, bins))),
            above.eq(or_tree(Mux(edge[b], cge[b + 1], 0) for b in range(bins - 1))),
        ]

        with m.FSM() as fsm:
            with m.State("IDLE"):
                # The job's registers load in every idle cycle (so ``start``, which decodes the
                # configuration, enables only the state and ``busy``).
                m.d.sync += [isweep.eq(0), pos.eq(D - 1), prefix.eq(0), hi_mask.eq(0),
                             rem.eq(self.keep), hold.eq(0), [c.eq(0) for c in cge]]
                with m.If(self.start):
                    m.d.sync += self.busy.eq(1)
                    m.next = "HIST"
            with m.State("HIST"):
                with m.If(take_hist & sw.w_last):
                    m.d.sync += hold.eq(1)
                with m.If(s3_last):
                    m.d.sync += cond.eq(Cat(cge[b] >= rem for b in range(bins)))
                    m.next = "DIGIT"
            with m.State("DIGIT"):
                m.d.sync += [
                    rem.eq(rem - above),
                    prefix.eq(prefix | (digit << (pos * DIGIT_BITS))),
                    hi_mask.eq(hi_mask | (Const(bins - 1, DIGIT_BITS) << (pos * DIGIT_BITS))),
                    pos.eq(pos - 1), hold.eq(0),
                    [c.eq(0) for c in cge],
                ]
                with m.If(pos == 0):
                    m.d.sync += room.eq(rem - above)
                    m.next = "MASK"
                with m.Else():
                    m.next = "HIST"
            with m.State("MASK"):
                with m.If(advance):
                    m.d.sync += m1_valid.eq(take_mask)
                with m.If(take_mask):
                    m.d.sync += [
                        m1_last.eq(sw.w_last),
                        m1_gt.eq(Cat(sw.w_lanes[n] & (score(n) > prefix) for n in range(a))),
                        m1_eq.eq(Cat(sw.w_lanes[n] & (score(n) == prefix) for n in range(a))),
                    ]
                before = _prefix_counts(m, [m1_eq[n] for n in range(a)])
                with m.If(advance):
                    m.d.sync += m2_valid.eq(m1_valid)
                    with m.If(m1_valid):
                        m.d.sync += [m2_last.eq(m1_last), m2_gt.eq(m1_gt), m2_eq.eq(m1_eq),
                                     [r.eq(v) for r, v in zip(m2_before, before, strict=True)],
                                     m2_ties.eq(_tree_sum(m1_eq[n] for n in range(a)))]
                keep = Cat(m2_gt[n] | (m2_eq[n] & (m2_before[n] < room)) for n in range(a))
                with m.If(advance):
                    m.d.sync += o.valid.eq(m2_valid)
                    with m.If(m2_valid):
                        m.d.sync += [o.payload.keep.eq(keep), o.payload.last.eq(m2_last),
                                     room.eq(Mux(room > m2_ties, room - m2_ties, 0))]
                with m.If(o.valid & o.ready & o.payload.last):
                    m.d.sync += [self.busy.eq(0), m1_valid.eq(0), m2_valid.eq(0)]
                    m.next = "IDLE"
        m.d.comb += [
            take_hist.eq(fsm.ongoing("HIST") & ~hold & sw.w_valid & ~sw.w_final),
            take_mask.eq(fsm.ongoing("MASK") & advance & sw.w_valid & sw.w_final),
        ]
        return m
