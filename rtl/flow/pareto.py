"""The area / Fmax / cycles Pareto front of a sweep (``focus-rtl synth --sweep ...``): per block,
the grid points that no other point beats on all three (smaller area, higher Fmax, fewer cycles of
the reference job of :mod:`rtl.flow.cycles`), as a table and a PNG."""

__all__ = ["AREA_METRICS", "FMAX_METRICS", "run_label", "pareto_front", "pareto_markdown",
           "plot_pareto"]

#: The area of a point: the first of these whose target ran (target, result key, label).
AREA_METRICS = (
    ("osu018-sta", "area_um2", "logic um^2 (osu018-sta)"),
    ("osu018-logic", "area_um2", "logic um^2 (osu018-logic)"),
    ("osu018", "area_um2", "um^2 (osu018)"),
    ("ecp5", "lut", "ECP5 LUT"),
    ("ice40", "lut", "iCE40 LUT"),
    ("generic", "transistors", "transistors (generic)"),
)
#: The Fmax of a point: the first of these whose target ran.
FMAX_METRICS = (
    ("osu018-sta", "Fmax MHz (OpenSTA)"),
    ("ecp5", "Fmax MHz (ECP5)"),
    ("ice40", "Fmax MHz (iCE40)"),
)


def run_label(sweep, run):
    """``"f1=v1,f2=v2"`` of a sweep's run (``"field=value"`` for a one-field sweep)."""
    point = run.get("point") or {sweep["field"]: run["value"]}
    return ",".join(f"{field}={value}" for field, value in point.items())


def _area(result, key):
    if result["status"] != "ok":
        return None
    return result.get("block", {}).get(key) if key == "lut" else result.get(key)


def _dominates(q, p):
    keys = [("area", 1), ("fmax_mhz", -1), ("cycles", 1)]
    pairs = [(sign * q[k], sign * p[k]) for k, sign in keys
             if q[k] is not None and p[k] is not None]
    return all(a <= b for a, b in pairs) and any(a < b for a, b in pairs)


def pareto_front(sweep):
    """``{"area_metric", "fmax_metric", "blocks": {block: [point]}}``, each point a dict of
    ``point`` (its label), ``area``, ``fmax_mhz``, ``cycles``, ``time_us`` (cycles / Fmax) and
    ``optimal`` (on the front: no other point of the block is at least as good on area, Fmax and
    cycles and better on one). Points without an area or an Fmax are left out."""
    targets = sweep["targets"]
    area = next(((t, k, label) for t, k, label in AREA_METRICS if t in targets), None)
    fmax = next(((t, label) for t, label in FMAX_METRICS if t in targets), None)
    front = {"area_metric": area[2] if area else None, "fmax_metric": fmax[1] if fmax else None,
             "blocks": {}}
    if area is None or fmax is None:
        return front
    blocks = list(sweep["runs"][0]["results"]) if sweep["runs"] else []
    for block in blocks:
        points = []
        for run in sweep["runs"]:
            results = run["results"][block]
            a = _area(results[area[0]], area[1])
            f = results[fmax[0]].get("fmax_mhz") if results[fmax[0]]["status"] == "ok" else None
            c = (run.get("cycles", {}).get(block) or {}).get("cycles")
            if a is None or not f:
                continue
            label = run_label(sweep, run)
            points.append({"point": label, "area": a, "fmax_mhz": f, "cycles": c,
                           "time_us": round(c / f, 3) if c is not None else None})
        for p in points:
            p["optimal"] = not any(_dominates(q, p) for q in points if q is not p)
        front["blocks"][block] = points
    return front


def pareto_markdown(front):
    """The front as Markdown lines (a table of every point, the optimal ones marked)."""
    if not front or not any(front["blocks"].values()):
        return []
    lines = ["### Pareto front (area, Fmax, cycles)", "",
             (f"Area: {front['area_metric']}; Fmax: {front['fmax_metric']}; cycles: the "
              "reference job of `rtl.flow.cycles` (golden.cycles models); job time = cycles / "
              "Fmax. **bold**: on the front (no other point is as good on all three and "
              "better on one)."), "",
             "| block | point | area | Fmax MHz | cycles | job us | front |",
             "|---|---|---:|---:|---:|---:|---|"]
    for block, points in front["blocks"].items():
        for p in points:
            mark = "**yes**" if p["optimal"] else ""
            area = f"{p['area']:.0f}" if isinstance(p["area"], float) else str(p["area"])
            lines.append(f"| {block} | {p['point']} | {area} | {p['fmax_mhz']:.1f} | "
                         f"{'-' if p['cycles'] is None else p['cycles']} | "
                         f"{'-' if p['time_us'] is None else p['time_us']} | {mark} |")
    return lines + [""]


def plot_pareto(sweep, path):
    """A PNG of the front: area against Fmax and area against job time, per block, the optimal
    points filled and labelled."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    front = sweep.get("pareto") or pareto_front(sweep)
    fig = Figure(figsize=(13, 5), layout="constrained")
    FigureCanvasAgg(fig)
    ax_f, ax_t = fig.subplots(1, 2)
    colors = [f"C{i}" for i in range(10)]
    areas = [p["area"] for points in front["blocks"].values() for p in points]
    for i, (block, points) in enumerate(front["blocks"].items()):
        color = colors[i % len(colors)]
        # Points with the same figures (a field that does not change the block) share a label.
        same = {}
        for p in points:
            same.setdefault((p["area"], p["fmax_mhz"], p["cycles"]), []).append(p)
        for group in same.values():
            p = group[0]
            kw = dict(color=color, s=50, zorder=3) if p["optimal"] else dict(
                facecolors="none", edgecolors=color, s=40, zorder=2)
            ax_f.scatter(p["area"], p["fmax_mhz"], **kw)
            if p["time_us"] is not None:
                ax_t.scatter(p["area"], p["time_us"], **kw)
            if p["optimal"]:
                text = p["point"] if len(group) == 1 else f"{p['point']} (+{len(group) - 1} same)"
                ax_f.annotate(text, (p["area"], p["fmax_mhz"]), fontsize="x-small",
                              xytext=(3, 3), textcoords="offset points")
                if p["time_us"] is not None:
                    ax_t.annotate(text, (p["area"], p["time_us"]), fontsize="x-small",
                                  xytext=(3, 3), textcoords="offset points")
        best = sorted((p for p in points if p["optimal"] and p["time_us"] is not None),
                      key=lambda p: p["area"])
        if best:
            ax_t.step([p["area"] for p in best], [p["time_us"] for p in best], where="post",
                      color=color, alpha=0.5)
        ax_f.plot([], [], "o", color=color, label=block)
    ax_f.set_ylabel(front["fmax_metric"] or "Fmax MHz")
    ax_t.set_ylabel("reference job time, us (cycles / Fmax)")
    for ax in (ax_f, ax_t):
        ax.set_xlabel(front["area_metric"] or "area")
        ax.grid(True, alpha=0.3)
        if areas and min(areas) > 0 and max(areas) > 10 * min(areas):
            ax.set_xscale("log")
    if any(p["time_us"] for points in front["blocks"].values() for p in points):
        times = [p["time_us"] for points in front["blocks"].values() for p in points
                 if p["time_us"]]
        if max(times) > 10 * min(times):
            ax_t.set_yscale("log")
    if front["blocks"]:
        ax_f.legend(fontsize="small")
    fig.suptitle(f"Pareto front over {sweep['field']} ({sweep.get('preset', 'custom')}): "
                 "filled = optimal")
    fig.savefig(path, dpi=100, metadata={"Software": None})
    return path
