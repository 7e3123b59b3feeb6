"""Pure formulas on frozen dataclasses. Standard library only on the import path (numpy
arrays are accepted where noted, but never imported here); nothing in core reads files or
prints."""
