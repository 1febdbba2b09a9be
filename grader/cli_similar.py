"""`grader similar`: who shares code beyond the starter and the lesson (registered by
`grader.cli`, whose exit codes and error handling it uses)."""

from __future__ import annotations

from pathlib import Path

import click

from grader import assignment as assignment_mod
from grader.errors import GraderError

__all__ = ["similar"]


@click.command()
@click.argument("submissions", type=click.Path(path_type=Path))
@click.option("--assignment", "assignment_arg", help="assignment.yaml path, or a name under ./assignments/")
@click.option("--out", type=click.Path(path_type=Path), default=Path("reports"), show_default=True)
@click.option("--base", multiple=True, type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="more code everyone was given (repeatable): .py, .ipynb, or text with code")
@click.option("--threshold", type=click.FloatRange(0, 1), default=0.4, show_default=True,
              help="flag pairs that share at least this share of fingerprints")
def similar(submissions: Path, assignment_arg: str | None, out: Path, base: tuple[Path, ...],
            threshold: float) -> None:
    """Find submissions that share code beyond the starter and the lesson; runs no student code."""
    from grader.intake.discover import discover
    from grader.report.similar import write_similar

    try:
        a = assignment_mod.load(assignment_mod.resolve(assignment_arg, Path.cwd()), require_hidden=False)
        found, written = write_similar(discover(submissions, a), a, out, base, threshold)
    except GraderError as exc:
        from grader.cli import _fail

        _fail(exc)
        return
    click.echo(f"{len(found.flagged)} similar pair(s), {len(found.clusters)} cluster(s) of 3+: "
               + ", ".join(str(p) for p in written if p.parent == out))
