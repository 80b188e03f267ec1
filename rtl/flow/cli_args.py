"""Command-line plumbing shared by the ``focus-rtl`` subcommands: the bad-argument exception, the
``--preset``/``--set`` options and their parsing into a :class:`~rtl.params.FocusParams`, and
comma-list flattening.

A subcommand reports :class:`BadArgs` as one line ``focus-rtl: error: ...`` on stderr and exit
status 2 (tool failures are its own exceptions, exit status 1); :func:`fail` writes that line.
"""

import sys

from ..params import FocusParams

__all__ = ["PRESETS", "BadArgs", "fail", "add_param_arguments", "params_from", "split_list"]

#: The names :meth:`FocusParams.preset` accepts.
PRESETS = ("default", "paper", "board")


class BadArgs(Exception):
    """A bad command-line argument: exit status 2, the message on one line."""


def fail(message, status=1):
    """Write the error line ``focus-rtl: error: <message>`` on stderr; returns ``status``, the
    exit status for the subcommand to return."""
    print(f"focus-rtl: error: {message}", file=sys.stderr)
    return status


def add_param_arguments(parser, *, preset_default="default"):
    """Add ``--preset NAME`` and ``--set FIELD=VALUE`` (repeatable, ``args.set`` is None when not
    given) to the argparse ``parser``.

    ``preset_default=None`` leaves ``args.preset`` None when ``--preset`` is not given, for a
    command that tells "no --preset" from "--preset default"; the default preset is still the one
    meant, and the help says so.
    """
    parser.add_argument("--preset", default=preset_default, metavar="NAME",
                        help=f"parameter preset: {', '.join(PRESETS)} "
                             f"(default: {preset_default or 'default'})")
    parser.add_argument("--set", action="append", metavar="FIELD=VALUE",
                        help="override a FocusParams field (repeatable), e.g. --set dim=8")


def params_from(preset="default", overrides=None):
    """``FocusParams.preset(preset).with_overrides(overrides)``; :class:`BadArgs` with the
    ``ValueError``/``TypeError`` text for an unknown preset, field or a bad value."""
    try:
        return FocusParams.preset(preset).with_overrides(overrides or [])
    except (ValueError, TypeError) as exc:
        raise BadArgs(str(exc)) from None


def split_list(values):
    """Flatten repeated and comma-separated option values (``action="append"``, None when not
    given): ``["a,b", " c"]`` -> ``["a", "b", "c"]``, empty items dropped."""
    return [item.strip() for value in values or [] for item in value.split(",") if item.strip()]
