"""The `grader` command: the only place that prints a verdict or exits.

    grader grade SUBMISSIONS   grade a class (or one submission) into reports/
    grader check [PATH]        a student's public self-check
    grader validate [A]        prove an assignment's tests catch its mutants
    grader kit [A] --out DIR   what to hand students: public tests, no keys
"""

from __future__ import annotations

import enum
import os
import sys
from pathlib import Path
from typing import Sequence

import click

from grader import assignment as assignment_mod
from grader.errors import GraderError, UsageError
from grader.results import SubmissionResult


class ExitCode(enum.IntEnum):
    OK = 0
    TESTS_FAILED = 1
    GRADER_ERROR = 2
    USAGE = 64


def _device(choice: str) -> str:
    import torch

    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if choice == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda was asked for, but torch sees no CUDA device here")
    return choice


def _fail(exc: GraderError) -> None:
    click.secho(f"grader: {exc}", fg="red", err=True)
    sys.exit(ExitCode.USAGE if isinstance(exc, UsageError) else ExitCode.GRADER_ERROR)


@click.group()
@click.version_option(package_name="grader")
def main() -> None:
    """Sandboxed autograder for PyTorch exercises."""


@main.command()
@click.argument("submissions", type=click.Path(path_type=Path))
@click.option("--assignment", "assignment_arg", help="assignment.yaml path, or a name under ./assignments/")
@click.option("--out", type=click.Path(path_type=Path), default=Path("reports"), show_default=True)
@click.option("--jobs", type=int, default=None, help="parallel workers [default: CPU count]")
@click.option("--device", type=click.Choice(["cpu", "cuda", "auto"]), default="cpu", show_default=True)
@click.option("--sandbox", type=click.Choice(["auto", "bwrap", "process"]), default="auto", show_default=True)
@click.option("--seed", type=int, default=1234, show_default=True)
@click.option("--force", is_flag=True, help="regrade even submissions whose result is up to date")
@click.option("--quiet", is_flag=True, help="no progress, only the summary")
def grade(submissions: Path, assignment_arg: str | None, out: Path, jobs: int | None,
          device: str, sandbox: str, seed: int, force: bool, quiet: bool) -> None:
    """Grade every submission under SUBMISSIONS (or SUBMISSIONS itself) into --out."""
    from grader import batch
    from grader.discover import discover
    from grader.pipeline import GradeOptions
    from grader.sandbox import Isolation

    try:
        a = assignment_mod.load(assignment_mod.resolve(assignment_arg, Path.cwd()))
        subs = discover(submissions, a)
        options = GradeOptions(device=_device(device), seed=seed)
        results = batch.run(subs, a, options, Isolation(sandbox), jobs or os.cpu_count() or 1,
                            out, force=force, progress=not quiet)
    except GraderError as exc:
        _fail(exc)
        return
    click.echo(batch.summary(results, a, out))


@main.command()
@click.argument("path", type=click.Path(path_type=Path), default=Path("."))
@click.option("--assignment", "assignment_arg", help="assignment.yaml path, or a name under ./assignments/")
@click.option("--sandbox", type=click.Choice(["auto", "bwrap", "process"]), default="auto", show_default=True)
@click.option("--html", "html_path", type=click.Path(path_type=Path), default=None,
              help="where to write the HTML report [default: PATH/report.html]")
def check(path: Path, assignment_arg: str | None, sandbox: str, html_path: Path | None) -> None:
    """Run the public tests on your own work; exit 0 when they all pass."""
    from grader.discover import discover
    from grader.export import write_report_html
    from grader.pipeline import GradeOptions, grade_submission
    from grader.sandbox import Isolation, Sandbox
    from grader.terminal import format_check_table

    try:
        yaml_path = _find_assignment(assignment_arg, path)
        a = assignment_mod.load(yaml_path, require_hidden=False)
        subs = discover(path, a)
        if len(subs) != 1:
            raise UsageError(f"{path} holds {len(subs)} submissions; `grader check` takes one")
        import torch

        torch.set_num_threads(1)
        with Sandbox(Isolation(sandbox), a.limits) as box:
            result = grade_submission(subs[0], a, box, GradeOptions(public=True))
    except GraderError as exc:
        _fail(exc)
        return
    target = html_path or ((path if path.is_dir() else path.parent) / "report.html")
    write_report_html(result, target)
    click.echo(format_check_table(result, color=sys.stdout.isatty()))
    click.echo(f"\nreport: {target}")
    sys.exit(ExitCode.OK if _all_public_passed(result) else ExitCode.TESTS_FAILED)


def _all_public_passed(result: SubmissionResult) -> bool:
    return all(t.passed for ex in result.exercises for t in ex.tests)


def _find_assignment(arg: str | None, path: Path) -> Path:
    """Next to the work, in a parent folder, or under ./assignments/."""
    if arg is not None:
        return assignment_mod.resolve(arg, Path.cwd())
    start = (path if path.is_dir() else path.parent).resolve()
    for folder in (start, *start.parents):
        if (folder / "assignment.yaml").is_file():
            return folder / "assignment.yaml"
        found = sorted((folder / "assignments").glob("*/assignment.yaml"))
        if len(found) == 1:
            return found[0]
    return assignment_mod.resolve(None, Path.cwd())


@main.command()
@click.argument("assignment_arg", required=False)
@click.option("--sandbox", type=click.Choice(["auto", "bwrap", "process"]), default="auto", show_default=True)
@click.option("--jobs", type=int, default=None)
def validate(assignment_arg: str | None, sandbox: str, jobs: int | None) -> None:
    """Check an assignment: schema, files, key, reference = full marks, mutants caught."""
    from grader.sandbox import Isolation
    from grader.validate import validate_assignment

    try:
        a = assignment_mod.load(assignment_mod.resolve(assignment_arg, Path.cwd()))
        report = validate_assignment(a, Isolation(sandbox), jobs or os.cpu_count() or 1)
    except GraderError as exc:
        _fail(exc)
        return
    for line in report.lines:
        click.echo(line)
    if report.ok:
        click.secho(f"{a.id}: valid", fg="green")
    else:
        click.secho(f"{a.id}: {len(report.problems)} problem(s)", fg="red")
        for p in report.problems:
            click.echo(f"  - {p}")
    sys.exit(ExitCode.OK if report.ok else ExitCode.TESTS_FAILED)


@main.command()
@click.argument("assignment_arg", required=False)
@click.option("--out", type=click.Path(path_type=Path), required=True)
def kit(assignment_arg: str | None, out: Path) -> None:
    """Write what students get: the YAML without keys, the public tests, an answers template."""
    from grader.kit import write_kit

    try:
        a = assignment_mod.load(assignment_mod.resolve(assignment_arg, Path.cwd()))
        written: Sequence[Path] = write_kit(a, out)
    except GraderError as exc:
        _fail(exc)
        return
    for p in written:
        click.echo(f"wrote {p}")


if __name__ == "__main__":
    main()
