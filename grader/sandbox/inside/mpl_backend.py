"""The matplotlib backend of student code in the sandbox: Agg, whose `show()` captures.

Selected by `grader.sandbox.inside.plotting` when a submission imports matplotlib (never before: this
module imports matplotlib). `plt.show()` returns at once: every open figure is rendered
to PNG for the student's report, then closed, as a script's window would close.
"""

from __future__ import annotations

from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

from grader.sandbox.inside.plotting import show

FigureCanvas = FigureCanvasAgg
FigureManager = FigureManagerBase

__all__ = ["FigureCanvas", "FigureManager", "show"]
