"""Descriptions of the stream payloads for integrators, derived from the ``data.StructLayout``s.

:func:`layout_fields` flattens a layout into its fields (dotted name, bit offset, width,
signedness), the one source for the JSON port description, the SystemVerilog package
(:func:`sv_package`) and the datasheet tables, so that none of them is written by hand.
"""

from amaranth.hdl import Shape
from amaranth.lib import data, stream, wiring

__all__ = ["layout_fields", "port_fields", "sv_struct", "sv_package", "sv_name", "sv_field",
           "SV_KEYWORDS"]


def layout_fields(layout, prefix="", offset=0):
    """The leaf fields of ``layout`` as dicts ``{"name", "offset", "width", "signed"}``, in bit
    order. Struct members are joined with ``.``, array elements with ``[i]``."""
    if isinstance(layout, data.StructLayout):
        fields = []
        for name, field in layout:
            fields += layout_fields(field.shape, f"{prefix}{name}" if not prefix
                                    else f"{prefix}.{name}", offset + field.offset)
        return sorted(fields, key=lambda f: f["offset"])
    if isinstance(layout, data.ArrayLayout):
        fields = []
        step = Shape.cast(layout.elem_shape).width
        for i in range(layout.length):
            fields += layout_fields(layout.elem_shape, f"{prefix}[{i}]", offset + i * step)
        return fields
    shape = Shape.cast(layout)
    return [{"name": prefix, "offset": offset, "width": shape.width, "signed": shape.signed}]


def port_fields(component):
    """Every stream port of ``component``: name -> {"direction", "width", "fields"} where
    direction is ``"in"`` (the component receives it) or ``"out"``."""
    ports = {}
    for name, member in component.signature.members.items():
        if not member.is_signature or not isinstance(member.signature, stream.Signature):
            continue
        direction = "in" if member.flow == wiring.In else "out"
        layout = member.signature.members["payload"].shape
        ports[name] = {"direction": direction, "width": Shape.cast(layout).width,
                       "fields": layout_fields(layout)}
    return ports


def sv_name(name):
    """A SystemVerilog identifier for a field path (``scores[3]`` becomes ``scores_3``)."""
    return name.replace(".", "_").replace("[", "_").replace("]", "")


def sv_struct(name, layout):
    """The ``typedef struct packed`` of ``layout`` as ``<name>_t``, with the typedefs it needs
    first: nested structs, and a named element type for arrays of signed elements (SystemVerilog
    makes the elements of a packed array signed only through a signed named type). Members are
    listed MSB first, so the struct's bits are the flat payload's bits."""
    typedefs = []

    def member_type(shape, path):
        if isinstance(shape, data.StructLayout):
            typedefs.append(_struct_body(f"{name}_{path}_t", shape, member_type))
            return f"{name}_{path}_t"
        if isinstance(shape, data.ArrayLayout):
            elem = shape.elem_shape
            dims = f"[{shape.length - 1}:0]"
            if isinstance(elem, data.Layout) or Shape.cast(elem).signed:
                elem_type = (member_type(elem, f"{path}_elem") if isinstance(elem, data.Layout)
                             else f"{name}_{path}_elem_t")
                if not isinstance(elem, data.Layout):
                    typedefs.append(f"typedef {_scalar(Shape.cast(elem))} {elem_type};")
                return f"{elem_type} {dims}"
            return f"logic {dims}[{Shape.cast(elem).width - 1}:0]"
        return _scalar(Shape.cast(shape))

    body = _struct_body(f"{name}_t", data.Layout.cast(layout), member_type)
    return "\n\n".join(typedefs + [body])


#: Field names that are SystemVerilog keywords get a trailing underscore in the package.
SV_KEYWORDS = frozenset("""alias always and assert assign assume automatic before begin bind bins
binsof bit break buf byte case cell chandle class clocking const constraint context continue cover
covergroup coverpoint cross deassign default defparam design disable dist do edge else end event
expect export extends extern final first_match for force foreach forever fork forkjoin function
generate genvar highz0 highz1 if iff ifnone ignore_bins illegal_bins import incdir include initial
inout input inside instance int integer interface intersect join join_any join_none large liblist
library local localparam logic longint macromodule matches medium modport module nand negedge new
nmos nor noshowcancelled not notif0 notif1 null or output package packed parameter pmos posedge
primitive priority program property protected pull0 pull1 pulldown pullup pulsestyle_ondetect
pulsestyle_onevent pure rand randc randcase randsequence rcmos real realtime ref reg release
repeat return rnmos rpmos rtran rtranif0 rtranif1 scalared sequence shortint shortreal
showcancelled signed small solve specify specparam static string strong0 strong1 struct super
supply0 supply1 table tagged task this throughout time timeprecision timeunit tran tranif0 tranif1
tri tri0 tri1 triand trior trireg type typedef union unique unsigned use uwire var vectored
virtual void wait wait_order wand weak0 weak1 while wildcard wire with within wor xnor
xor""".split())


def sv_field(name):
    """The package's member name for layout field ``name``."""
    return f"{name}_" if name in SV_KEYWORDS else name


def _scalar(shape):
    return f"logic {'signed ' if shape.signed else ''}[{shape.width - 1}:0]"


def _struct_body(type_name, layout, member_type):
    lines = ["typedef struct packed {"]
    for field_name, field in sorted(layout, key=lambda item: -item[1].offset):
        lines.append(f"    {member_type(field.shape, field_name)} {sv_field(field_name)};")
    lines.append(f"}} {type_name};")
    return "\n".join(lines)


def sv_package(package, payloads):
    """A SystemVerilog package with one packed struct per payload (``payloads``: name ->
    layout), bit-compatible with the emitted Verilog's flat ``*__payload`` ports."""
    parts = [f"package {package};", ""]
    for name, layout in payloads.items():
        parts += [sv_struct(name, layout), ""]
    parts.append(f"endpackage : {package}")
    return "\n".join(parts) + "\n"
