"""One Report object, rendered as a rich table, JSON or Markdown (renderers import lazily)."""

from gpuplan.report.model import Assumption, Line, Report, Section, Table

__all__ = ["Assumption", "Line", "Report", "Section", "Table"]
