"""The a-way bubble sorter of the top-k selector (spec 3.2, ``sorter="bubble"``)."""

from amaranth.hdl import Cat, Module, Mux, Signal, signed

from ..block import FocusBlock
from ..lib.bounds import above
from ..params import ceil_log2
from .importance_buffer import buffer_word_layout
from .topk_engine import TopKEngineSignature, add_sweeper, or_tree

__all__ = ["BubbleSorter"]


class BubbleSorter(FocusBlock):
    """The paper's a-way bubble sorter as a :class:`rtl.sec.topk_selector.TopKEngineSignature`
    engine: ceil(k/a) passes, each streaming the M scores through a chain of ``lanes``
    compare-exchange cells, one score per cycle, then one pass that emits the mask.

    Order key: ``(score << index_bits) | ~index``, so a larger key is a better token and keys are
    all distinct. The chain holds up to ``lanes`` keys, largest in cell 0. Each score that enters
    is compared with every cell at once; every cell whose key is smaller takes its upper
    neighbour's key (or the new key, at the insertion point), the lowest cell's key falls out.
    After a pass the chain holds the ``lanes`` largest keys that entered. A pass admits only keys
    below the previous pass's smallest pick (cell ``lanes-1`` at the end of that pass), so pass p
    picks the tokens of rank p*a .. p*a+a-1. This is the paper's bubble chain with the exchange
    done in the cycle the key enters instead of one cell further per cycle: the same cells and
    compare-exchanges, but a pass needs no drain, so the passes run back to back (M cycles each).

    After the last pass, the pick of rank k-1 (cell (k-1) mod a) is the threshold key T, and the
    mask pass sets mask[j] = key(j) >= T, a beat per cycle. k = 0 runs no pass and keeps nothing.

    Latency and throughput, no stalls and all words available: the first score reaches the chain
    5 cycles after ``start`` (the sweeper's start, the word's read, the sweeper's word register,
    the serializer's word register, the chain's input register), then one score per cycle for
    ``ceil(k/a) * M`` cycles, the threshold register, and the mask at one beat per cycle
    (``golden.cycles.BUBBLE_SORT_LATENCY`` counts the serializer's, the chain's input and the
    threshold registers; ``TOPK_LATENCY`` the rest). Words are read one at a time, as the pass
    reaches them, so the first pass can follow the loader. ``o_stream`` back-pressure holds only
    the mask pass.
    """

    def __init__(self, params):
        super().__init__(params, TopKEngineSignature)

    def elaborate(self, platform):
        p = self._params
        a, sb, ib = p.lanes, p.score_bits, p.index_bits
        kb = sb + ib
        m = Module()
        o = self.o_stream
        sw = add_sweeper(m, self)

        # Issue side: picks still to come from the passes not yet issued. The sweep being issued
        # is the mask sweep once it is zero.
        irest = Signal(p.count_bits)
        m.d.comb += sw.final.eq(irest == 0)
        with m.If(sw.wrap & ~sw.final):
            m.d.sync += irest.eq(Mux(above(irest, a), irest - a, 0))

        # The serializer: the current word, one lane per cycle.
        word = buffer_word_layout(p)
        cur = Signal(word)
        cur_valid = Signal()
        cur_lane = Signal(range(a))
        cur_count = Signal(range(a + 1))
        cur_base = Signal(p.count_bits)
        cur_first = Signal()
        cur_last = Signal()
        end_of_word = Signal()    # cur_lane is the word's last lane (a register: it gates the
        take_sort = Signal()      # word register's load, which fans out to every score bit)
        m.d.comb += take_sort.eq((~cur_valid | end_of_word) & sw.w_valid & ~sw.w_final)
        with m.If(take_sort):
            m.d.sync += [cur.eq(sw.w_data), cur_valid.eq(1), cur_lane.eq(0),
                         end_of_word.eq(sw.w_count == 1),
                         cur_count.eq(sw.w_count), cur_base.eq(sw.w_base),
                         cur_first.eq(sw.w_first), cur_last.eq(sw.w_last)]
        with m.Elif(cur_valid & end_of_word):
            m.d.sync += cur_valid.eq(0)
        with m.Elif(cur_valid):
            m.d.sync += [cur_lane.eq(cur_lane + 1), end_of_word.eq(cur_lane + 2 == cur_count)]

        # The score entering the chain, registered: the lane mux and the index adder stay out of
        # the chain's compare-and-update path.
        x_valid = Signal()
        x_key = Signal(kb)
        x_fresh = Signal()        # first score of a pass: the chain starts empty
        x_last = Signal()         # last score of a pass
        m.d.sync += [
            x_valid.eq(cur_valid),
            x_key.eq(Cat(~(cur_base + cur_lane)[:ib], cur.scores[cur_lane])),
            x_fresh.eq(cur_valid & cur_first & (cur_lane == 0)),
            x_last.eq(cur_valid & cur_last & end_of_word),
        ]

        admit = Signal()
        key, full = self._chain(m, x_key, x_fresh, admit)

        # Admission threshold: everything in the first pass; afterwards only keys below the
        # previous pass's smallest pick (nothing, if that pass did not fill the chain).
        first_pass = Signal()
        th_all = Signal()
        th_key = Signal(kb)
        th_none = Signal()
        eff_all = Mux(x_fresh, first_pass, th_all)
        eff_none = Mux(x_fresh, ~first_pass & ~full[a - 1], th_none)
        eff_key = Mux(x_fresh, key[a - 1], th_key)
        m.d.comb += admit.eq(x_valid & ~eff_none & (eff_all | (x_key < eff_key)))
        with m.If(x_fresh):
            m.d.sync += [first_pass.eq(0), th_all.eq(eff_all), th_none.eq(eff_none),
                         th_key.eq(eff_key)]

        # Passes and the mask.
        crest = Signal(p.count_bits)      # picks still to come, from the pass now in the chain
        none = Signal()                   # k = 0
        t_score = Signal(sb)
        # Lane n of the mask word is token w_base + n; it is kept when (s, -j) >= (T, -t_index),
        # that is s > T, or s == T and n <= t_index - w_base. ``reach`` is t_index - w_base of the
        # mask word in w_data: the mask sweep starts at word 0 and steps by ``lanes``. Two flags,
        # set with it, say whether it covers every lane (reach >= a - 1) or none (reach < 0);
        # otherwise 0 <= reach < a - 1 and its low bits alone give the lanes it covers.
        reach = Signal(signed(p.count_bits + 2))
        reach_all = Signal()
        reach_none = Signal()
        lb = ceil_log2(a)
        take_mask = Signal()
        m.d.comb += sw.take.eq(take_sort | take_mask)
        bits = []
        for n in range(a):
            s = sw.w_data.scores[n]
            covered = ~reach_none & (reach_all | (reach[:lb] >= n)) if n else ~reach_none
            better = (s > t_score) | ((s == t_score) & covered)
            bits.append(sw.w_lanes[n] & ~none & better)
        # One-hot: cell crest-1. crest changes only at a pass's last score, at least a cycle
        # before the THRESHOLD state reads this.
        pick_at = Signal(a)
        m.d.sync += pick_at.eq(Cat(crest == n + 1 for n in range(a)))
        advance = ~o.valid | o.ready
        # The MASK state as registers of its own (``masking`` after THRESHOLD, ``none`` for a job
        # with k = 0, which goes there at once): the state's decode stood in front of the
        # sweeper's take and its read issue (the iCE40's critical path). Outside a job the
        # sweeper holds no word, so ``none`` alone takes nothing.
        masking = Signal()
        with m.FSM():
            with m.State("IDLE"):
                # The job's registers load in every idle cycle (so ``start``, which decodes the
                # configuration, enables only the state and ``busy``).
                m.d.sync += [irest.eq(self.keep), crest.eq(self.keep), none.eq(self.keep_zero),
                             first_pass.eq(1)]
                with m.If(self.start):
                    m.d.sync += self.busy.eq(1)
                    with m.If(self.keep_zero):
                        m.next = "MASK"
                    with m.Else():
                        m.next = "SORT"
            with m.State("SORT"):
                with m.If(x_last):
                    with m.If(above(crest, a)):
                        m.d.sync += crest.eq(crest - a)
                    with m.Else():
                        m.next = "THRESHOLD"
            with m.State("THRESHOLD"):
                # The chain is final: the pick of rank k-1 is in cell crest-1 (an AND-OR select
                # on the one-hot register, not a chain of a muxes).
                pick = or_tree(Mux(pick_at[n], key[n], 0) for n in range(a))
                t_index = ~pick[:ib]
                m.d.sync += [t_score.eq(pick[ib:]), reach.eq(t_index),
                             reach_all.eq(t_index >= a - 1 if a > 1 else 1), reach_none.eq(0),
                             masking.eq(1)]
                m.next = "MASK"
            with m.State("MASK"):
                with m.If(advance):
                    m.d.sync += o.valid.eq(take_mask)
                    with m.If(take_mask):
                        m.d.sync += [o.payload.keep.eq(Cat(*bits)), o.payload.last.eq(sw.w_last),
                                     reach.eq(reach - a), reach_all.eq(reach >= 2 * a - 1),
                                     reach_none.eq(reach < a)]
                with m.If(o.valid & o.ready & o.payload.last):
                    m.d.sync += [self.busy.eq(0), masking.eq(0)]
                    m.next = "IDLE"
        m.d.comb += take_mask.eq((masking | none) & advance & sw.w_valid & sw.w_final)
        return m

    def _chain(self, m, x_key, x_fresh, admit):
        """The chain of ``lanes`` compare-exchange cells, largest key in cell 0. In a cycle with
        ``admit`` the entering key ``x_key`` is inserted (a cell whose key is smaller takes its
        upper neighbour's, the lowest cell's falls out); ``x_fresh`` (a pass's first score)
        empties the chain first. Returns the cells' ``(key, full)`` registers, one per cell.

        A pass streams the scores in index order and starts with an empty chain, so every key in
        it has a lower index than the entering one: the entering key is the larger exactly when
        its score is (a tie goes to the lower index), and the cells compare scores only (the
        admission compares whole keys)."""
        p = self._params
        a, ib = p.lanes, p.index_bits
        key = [Signal(len(x_key), name=f"key{n}") for n in range(a)]
        full = [Signal(name=f"full{n}") for n in range(a)]
        full_eff = [Signal(name=f"full_eff{n}") for n in range(a)]
        beats = [Signal(name=f"beats{n}") for n in range(a)]
        for n in range(a):
            m.d.comb += [full_eff[n].eq(full[n] & ~x_fresh),
                         beats[n].eq(~full_eff[n] | (x_key[ib:] > key[n][ib:]))]
        with m.If(admit | x_fresh):
            for n in range(a):
                with m.If(beats[n]):
                    if n == 0:
                        m.d.sync += [key[0].eq(x_key), full[0].eq(admit)]
                    else:
                        m.d.sync += [
                            key[n].eq(Mux(beats[n - 1], key[n - 1], x_key)),
                            full[n].eq(Mux(beats[n - 1], full_eff[n - 1], admit)),
                        ]
        return key, full
