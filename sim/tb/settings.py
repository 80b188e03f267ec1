"""The settings a cocotb testbench reads from its environment: ``FOCUS_PARAMS``, which
:func:`sim.runner.run_cocotb` always passes, and the ones a test may pass in ``extra_env``
(``FOCUS_SEED``, ``FOCUS_JOBS``, ``FOCUS_STALLS``, ...). Every testbench uses :data:`PARAMS`
and :data:`SEED`; the others it reads with its own defaults."""

import json
import os

from rtl.params import FocusParams

__all__ = ["PARAMS", "SEED", "tb_params", "env_int", "env_stalls"]


def tb_params():
    """The :class:`FocusParams` in ``FOCUS_PARAMS`` (their ``to_dict()`` as JSON); the defaults
    when it is not set."""
    return FocusParams.from_dict(json.loads(os.environ.get("FOCUS_PARAMS", "{}")))


def env_int(name, default):
    """The integer in environment variable ``name``, or ``default`` when it is not set."""
    return int(os.environ.get(name, default))


def env_stalls(default="0.0,0.3"):
    """The stall probabilities in ``FOCUS_STALLS`` (comma-separated), or those of ``default``."""
    return [float(s) for s in os.environ.get("FOCUS_STALLS", default).split(",")]


#: The run's :class:`FocusParams` (:func:`tb_params`).
PARAMS = tb_params()
#: The seed of the run's random jobs and stalls: ``FOCUS_SEED``, default 1.
SEED = env_int("FOCUS_SEED", 1)
