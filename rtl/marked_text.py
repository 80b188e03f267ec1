"""Generated parts of hand-written Markdown: the text between ``<!-- NAME:begin -->`` and
``<!-- NAME:end -->`` lines is replaced by a command's output (the register map, the claims
table, the QoR table). Plain Python, no Amaranth."""

__all__ = ["markers", "replace_marked"]


def markers(name):
    """The begin and end comments of the part called ``name``."""
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def replace_marked(text, name, body):
    """``text`` with the lines between the ``name`` markers replaced by ``body`` (which ends with
    a newline). ``ValueError`` unless ``text`` holds the begin marker once, then the end marker
    once."""
    begin, end = markers(name)
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"the text must hold {begin!r} once, then {end!r} once")
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    return f"{head}{begin}\n{body}{end}{tail}"
