"""What every benchmark prints and writes: timed progress lines on stderr, Markdown tables."""

import sys
import time

__all__ = ["progress_printer", "markdown_table"]


def progress_printer(name):
    """A ``progress(message)`` function that prints ``[name  12.3 s] message`` on stderr, the time
    counted from this call."""
    start = time.monotonic()

    def progress(message):
        print(f"[{name} {time.monotonic() - start:7.1f} s] {message}", file=sys.stderr,
              flush=True)

    return progress


def markdown_table(header, rows):
    """A Markdown table (with a blank line before it) of ``header`` and ``rows``."""
    lines = ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
