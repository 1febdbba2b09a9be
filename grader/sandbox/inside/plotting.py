"""The student's own figures, captured as PNG inside the sandboxed child.

Runs in the child (the grader's process never imports matplotlib). Nothing here imports
matplotlib at import: `install()` adds an import hook, and a submission that imports matplotlib
pays for it, unless the batch's zygote already did (`warm`: once a submission of the batch is
seen to import matplotlib or seaborn, where the assignment's environment declares them, the
children forked after that find them loaded). Either way our hook selects
`grader.sandbox.inside.mpl_backend` first, a
non-interactive Agg backend whose `plt.show()` returns at once (no window, no warning)
after capturing every open figure. In a notebook (`watch_shell`), as in Jupyter:

- the figures a cell leaves open are captured when it ends, then closed;
- `display(fig)` and a figure as a cell's result are captured;
- any `image/png` a cell displays is kept too (`display(Image(...))`);
- `%matplotlib inline` (or any backend, `%pylab`) keeps this backend and never fails.

Each figure is rendered to PNG at most `MAX_PNG_BYTES` (a lower resolution where needed;
else dropped), identical pictures are kept once, and at most `MAX_FIGURES` are kept: the
grader asks for them with the child's `figures` op and checks them again (`figures.py`).
"""

from __future__ import annotations

import base64
import gc
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

MAX_FIGURES = 3
MAX_PNG_BYTES = 200 * 1024
DPIS = (100, 72, 50)
"""Resolutions tried in turn until a figure's PNG fits in MAX_PNG_BYTES."""
MAX_SIDE_PX = 2000
"""A huge figure (`figsize=(80, 60)`) is drawn at a lower resolution, never this wider."""
BACKEND = "module://grader.sandbox.inside.mpl_backend"

WARM_IMPORTS = {"matplotlib": ("matplotlib", "matplotlib.pyplot"), "seaborn": ("seaborn",)}
"""Per package an assignment's environment may declare, what a batch's zygote may import for
its children (`warm`, `WarmUp`): a child that plots as the lesson does otherwise pays 0.5 s of
CPU to import pyplot and seaborn (pandas with it) and to build matplotlib's font list. Each
starts no thread and draws no random number at import (held by a test in tests/test_sandbox.py)."""

__all__ = ["BACKEND", "COLLECTOR", "WARM_IMPORTS", "Collector", "WarmUp", "install", "warm",
           "warm_imports", "watch_shell"]


class Collector:
    """The figures this child captured and not yet handed to the grader."""

    def __init__(self) -> None:
        self.source = ""
        """Where the code now running came from: "cell 7", "attention.py", "plot_attention(...)"."""
        self.kept: list[dict[str, Any]] = []
        self.left_out: list[str] = []
        self._digests: set[str] = set()
        self._drawn: dict[int, Any] = {}
        """Figures already captured, by id: captured again only once changed (stale)."""

    def add_figure(self, fig: Any) -> None:
        """Capture a matplotlib figure (unless this very picture was captured already)."""
        if self._drawn.get(id(fig)) is fig and not getattr(fig, "stale", True):
            return
        if not (fig.axes or fig.lines or fig.images or fig.texts or fig.patches):
            return  # an empty figure: Jupyter shows no picture either
        self._drawn[id(fig)] = fig
        if len(self.kept) >= MAX_FIGURES:
            self._leave_out("more than the figures a report shows")
            return
        png = render_png(fig)
        if png is None:
            self._leave_out(f"larger than {MAX_PNG_BYTES // 1024} KB even at {DPIS[-1]} dpi")
            return
        self.add_png(png)

    def add_png(self, png: bytes | str) -> None:
        """Keep PNG bytes that the student's code displayed (base64 text accepted)."""
        data = _as_bytes(png)
        if data is None:
            return
        digest = hashlib.sha256(data).hexdigest()
        if digest in self._digests:
            return
        if len(data) > MAX_PNG_BYTES:
            self._leave_out(f"larger than {MAX_PNG_BYTES // 1024} KB")
            return
        if len(self.kept) >= MAX_FIGURES:
            self._leave_out("more than the figures a report shows")
            return
        self._digests.add(digest)
        self.kept.append({"png": base64.b64encode(data).decode("ascii"),
                          "source": self.source[:200]})

    def _leave_out(self, why: str) -> None:
        if len(self.left_out) < 100:
            self.left_out.append(f"a figure from {self.source or 'your code'} was not kept ({why})")

    def flush_open(self) -> None:
        """Capture every figure pyplot still holds, then close them (as `plt.show()` in
        a script, or the end of a cell in Jupyter, would leave none open)."""
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is None:
            return
        from matplotlib._pylab_helpers import Gcf

        for manager in list(Gcf.get_all_fig_managers()):
            try:
                self.add_figure(manager.canvas.figure)
            except Exception as exc:  # the student's figure may be broken; that is theirs
                self._leave_out(f"it could not be drawn: {type(exc).__name__}: {exc}"[:300])
        try:
            pyplot.close("all")
        except Exception:
            pass

    def take(self) -> dict[str, Any]:
        """What the `figures` op answers: figures kept since the last call, and notes."""
        self.flush_open()
        answer = {"figures": self.kept, "left_out": list(dict.fromkeys(self.left_out))[:10]}
        self.kept, self.left_out = [], []
        return answer


COLLECTOR = Collector()


def render_png(fig: Any) -> bytes | None:
    """The figure as PNG, at the first resolution of DPIS that fits; None if none does."""
    widest = max(float(x) for x in fig.get_size_inches()) or 1.0
    for dpi in sorted({min(d, MAX_SIDE_PX / widest) for d in DPIS}, reverse=True):
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
        data = buffer.getvalue()
        if len(data) <= MAX_PNG_BYTES:
            return data
    return None


def _as_bytes(png: bytes | str) -> bytes | None:
    if isinstance(png, bytes):
        return png
    if isinstance(png, str):
        try:
            return base64.b64decode(png, validate=False)
        except ValueError:
            return None
    return None


def show(*args: Any, **kwargs: Any) -> None:
    """`plt.show()` under grader.sandbox.inside.mpl_backend: capture and close, never block."""
    COLLECTOR.flush_open()


# ---------------------------------------------------------------- choosing the backend


class _BackendHook(importlib.abc.MetaPathFinder):
    """Once `matplotlib` itself is imported, choose our backend, before pyplot exists.
    Only the import of matplotlib is touched, and only once."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "matplotlib":
            return None
        uninstall()
        spec = importlib.util.find_spec(fullname)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            original(module)
            use_backend(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def use_backend(matplotlib: ModuleType) -> None:
    """Select grader.sandbox.inside.mpl_backend (plain rcParams: nothing is imported yet), and keep it:
    a backend the student's code asks for (`matplotlib.use("TkAgg")`, copied from a
    laptop) cannot open a window here, and would fail where this one draws."""
    try:
        if getattr(matplotlib.use, "__name__", "") != _keep_backend.__name__:
            matplotlib.use(BACKEND)
            setattr(matplotlib, "use", _keep_backend)  # noqa: B010 - a module's function
    except Exception:  # an unexpected matplotlib: MPLBACKEND=Agg still holds
        pass


def _keep_backend(backend: str, *, force: bool = True) -> None:
    """`matplotlib.use` in the sandbox: the headless backend stays (see `use_backend`)."""


_HOOK = _BackendHook()


def install() -> None:
    """Watch for matplotlib's import (or, if it is already imported, select now)."""
    if "matplotlib" in sys.modules:
        use_backend(sys.modules["matplotlib"])
    elif _HOOK not in sys.meta_path:
        sys.meta_path.insert(0, _HOOK)


def uninstall() -> None:
    if _HOOK in sys.meta_path:
        sys.meta_path.remove(_HOOK)


# ---------------------------------------------------------------- warming the zygote


def warm_imports(packages: Iterable[str]) -> tuple[str, ...]:
    """The modules `warm` imports for an environment's packages (by distribution name)."""
    names = {name.lower().replace("_", "-") for name in packages}
    return tuple(m for package, modules in WARM_IMPORTS.items() if package in names for m in modules)


def warm(modules: Iterable[str]) -> None:
    """Import these plotting modules (only those of WARM_IMPORTS) in the zygote, as a child
    would: our backend selected first. They run in a fresh, empty folder that is their home,
    current folder and matplotlib's configuration folder, gone once they are loaded: nothing a
    student's child could have left where the zygote looks (a `matplotlibrc`, fonts under
    `~/.fonts`) reaches the children after it. A child that later writes to matplotlib's cache
    finds no folder, which matplotlib only logs."""
    allowed = {m for group in WARM_IMPORTS.values() for m in group}
    wanted = [m for m in modules if m in allowed]
    if not wanted:
        return
    folder = tempfile.mkdtemp(prefix="grader-mpl-")
    saved = {name: os.environ.get(name) for name in ("MPLCONFIGDIR", "HOME")}
    cwd = os.getcwd()
    os.environ.update(MPLCONFIGDIR=folder, HOME=folder)
    os.chdir(folder)
    try:
        install()
        for name in wanted:
            try:
                importlib.import_module(name)
            except Exception:  # not installed, or broken: each child meets it as before
                pass
        uninstall()
    finally:
        os.chdir(cwd)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class WarmUp:
    """The plotting libraries a zygote may import for its children (`warm`), once a
    connection has seen a submission that plots (`Warm`), right after answering it: every child
    forked after that answer finds them loaded, and a class that never plots never pays for
    them (a larger zygote makes every fork and exit dearer)."""

    modules: tuple[str, ...]
    asked: bool = False
    done: bool = False

    @property
    def due(self) -> bool:
        return self.asked and not self.done and bool(self.modules)

    def run(self) -> None:
        self.done = True
        warm(self.modules)
        gc.freeze()  # what was loaded lives as long as the zygote, as at start


# ---------------------------------------------------------------- notebooks


def watch_shell(shell: Any) -> None:
    """Capture what an IPython shell's cells show, as Jupyter would display it."""
    if getattr(shell, "_grader_figures", False):
        return
    shell._grader_figures = True
    shell.enable_matplotlib = _enable_matplotlib  # `%matplotlib [anything]`, `%pylab`
    shell.enable_gui = _no_event_loop
    shell.events.register("post_execute", COLLECTOR.flush_open)
    png = shell.display_formatter.formatters["image/png"]
    png.for_type_by_name("matplotlib.figure", "Figure", _displayed_figure)
    shell.display_pub = _publisher(shell)


def _enable_matplotlib(gui: str | None = None) -> tuple[str, str]:
    """`%matplotlib inline` (or any other backend a notebook asks for): here, always our
    backend, whose figures reach the report as inline ones reach a Jupyter page."""
    import matplotlib

    use_backend(matplotlib)
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None and pyplot.get_backend() != BACKEND:
        pyplot.switch_backend(BACKEND)
    return "inline", BACKEND


def _no_event_loop(gui: str | None = None) -> None:
    """No GUI event loop runs in the sandbox (the base shell would raise here)."""


def _displayed_figure(fig: Any) -> None:
    """The image/png formatter of a Figure: capture it (the data goes no further)."""
    try:
        COLLECTOR.add_figure(fig)
    except Exception as exc:
        COLLECTOR._leave_out(f"it could not be drawn: {type(exc).__name__}: {exc}"[:300])
    return None


def _publisher(shell: Any) -> Any:
    from IPython.core.displaypub import DisplayPublisher

    class Publisher(DisplayPublisher):  # type: ignore[misc]
        """Keeps the PNGs a cell displays; prints the rest as a terminal IPython would."""

        def publish(self, data: Any, metadata: Any = None, *args: Any, **kwargs: Any) -> None:
            if isinstance(data, dict) and data.get("image/png") is not None:
                COLLECTOR.add_png(data["image/png"])
                return
            super().publish(data, metadata, *args, **kwargs)

    return Publisher(shell=shell, parent=shell)  # type: ignore[no-untyped-call]
