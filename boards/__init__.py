"""Board tops for the Focus unit (iCEBreaker, ULX3S): thin wrappers around the core, built with
amaranth-boards and the YoWASP tools. Empty until the board prototype lands (spec section 7)."""
