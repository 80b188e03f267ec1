"""The targets of ``focus-rtl synth``, the FPGA devices they place on, and how results are
judged."""

TARGETS = ("generic", "ice40", "ecp5", "osu018", "osu018-logic", "osu018-sta")

#: The targets that need the OSU 0.18 um liberty file.
LIBERTY_TARGETS = ("osu018", "osu018-logic", "osu018-sta")

#: The targets timed by OpenSTA (``sta``, Debian's opensta).
STA_TARGETS = ("osu018-sta",)

#: target -> (human-readable device, nextpnr device arguments)
DEVICES = {
    "ice40": ("iCE40 UP5K, SG48", ["--up5k", "--package", "sg48"]),
    "ecp5": ("ECP5 LFE5U-85F, CABGA381", ["--85k", "--package", "CABGA381"]),
}

#: nextpnr's timing target per FPGA target. It steers the placer; the report gives the achieved
#: Fmax whether or not the target is met (``--timing-allow-fail``).
DEFAULT_FREQ_MHZ = {"ice40": 48.0, "ecp5": 100.0}

#: The clock target of the OpenSTA targets, MHz: the period the slack is reported against (the
#: Fmax does not depend on it).
DEFAULT_STA_FREQ_MHZ = {"osu018-sta": 100.0}

#: Every target with a clock target (``--freq TARGET=MHZ``) -> its default.
FREQ_TARGETS = {**DEFAULT_FREQ_MHZ, **DEFAULT_STA_FREQ_MHZ}

#: Statuses that make the run exit non-zero even without ``--strict``.
HARD_FAILURES = ("synth_failed",)

#: Statuses of flows that could not run here (not failures, even with ``--strict``).
SKIPPED = ("no_liberty", "no_sta")

#: Metrics of :func:`relative_shares`: name -> (target, how to read it from a result).
def _if_ok(key):
    """The result's ``key`` when its flow ended ``ok``, else None."""
    return lambda r: r.get(key) if r["status"] == "ok" else None


SHARE_METRICS = {
    "transistors": ("generic", _if_ok("transistors")),
    "area_um2": ("osu018", _if_ok("area_um2")),
    "logic_area_um2": ("osu018-logic", _if_ok("area_um2")),
    "ice40_lut": ("ice40", lambda r: r.get("block", {}).get("lut")),
    "ecp5_lut": ("ecp5", lambda r: r.get("block", {}).get("lut")),
}

