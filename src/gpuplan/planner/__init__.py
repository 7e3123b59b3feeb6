"""Search over parallel layouts (vectorised with numpy through the core formulas)."""
