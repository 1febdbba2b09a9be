"""The `grader` command: the only place that prints a verdict or exits.

    grader grade SUBMISSIONS   grade a class (or one submission) into reports/
    grader report              re-render reports/ from result.json (+ overrides.yaml)
    grader check [PATH]        a student's public self-check
    grader validate [A]        prove an assignment's tests catch its mutants
    grader kit [A] --out DIR   what to hand students: public tests, no keys
    grader environment [A...]  the packages student code may import (--requirements: for pip)
    grader similar SUBMISSIONS who shares code beyond the starter and the lesson (-> reports/)
    grader review              grade written answers by hand on a local page (-> overrides.yaml)
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from grader import assignment as assignment_mod
from grader.config import RunConfig
from grader.errors import GraderError, UsageError, one_line
from grader.results import SubmissionResult

if TYPE_CHECKING:
    from grader.report.writers import Context, Writers


class ExitCode(enum.IntEnum):
    OK = 0
    TESTS_FAILED = 1
    GRADER_ERROR = 2
    USAGE = 64


def _fail(exc: GraderError) -> None:
    click.secho(f"grader: {one_line(str(exc))}", fg="red", err=True)
    sys.exit(ExitCode.USAGE if isinstance(exc, UsageError) else ExitCode.GRADER_ERROR)


def _format_names() -> list[str]:
    from grader.report.writers import names

    return names()


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
@click.option("--format", "formats", multiple=True, type=click.Choice(_format_names()),
              help="also write this format (repeatable): github (step summary + annotations), "
                   "gradescope (results.json), jsonl (one JSON line per student on stdout), "
                   "junit (OUT/junit.xml)")
@click.option("--junit", "junit_path", type=click.Path(path_type=Path), default=None,
              help="write JUnit XML to this file")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True,
              help="local worker processes, or an existing Dask cluster (needs --scheduler)")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="the Dask scheduler, e.g. tcp://10.0.0.5:8786 (workers must see the submissions' paths)")
@click.option("--fail-under", type=float, default=None, metavar="SCORE",
              help="exit 1 when a submission scores below SCORE points (the assignment's "
                   "scale, as in grades.csv)")
@click.option("--similarity", is_flag=True, help="also run `grader similar` into --out")
def grade(submissions: Path, assignment_arg: str | None, out: Path, jobs: int | None,
          device: str, sandbox: str, seed: int, force: bool, quiet: bool,
          formats: tuple[str, ...], junit_path: Path | None, executor: str,
          scheduler: str | None, fail_under: float | None, similarity: bool = False) -> None:
    """Grade every submission under SUBMISSIONS (or SUBMISSIONS itself) into --out."""
    from grader.batch import run as batch
    from grader.batch.prepare import resolve_device
    from grader.environment import require_installed
    from grader.intake.discover import discover
    from grader.report import writers

    try:
        chosen = writers.select(formats, junit_path)
        a = assignment_mod.load(assignment_mod.resolve(assignment_arg, Path.cwd()))
        require_installed(a.environment, a.path)
        subs = discover(submissions, a)
        ctx = writers.Context(out=out, exercise_ids=tuple(ex.id for ex in a.exercises),
                              env=dict(os.environ), cwd=Path.cwd(),
                              submissions={s.id: s for s in subs})
        hook = _StudentHook(chosen, ctx)
        config = RunConfig(assignment=a.path, isolation=sandbox, device=resolve_device(device), seed=seed)
        if executor == "dask" and not scheduler:
            raise UsageError("--executor dask needs --scheduler ADDRESS")
        run_on = (batch.dask_executor(a, config, scheduler or "") if executor == "dask"
                  else batch.local_executor(a, config, jobs or os.cpu_count() or 1))
        results = batch.run(subs, a, config, run_on, out, force=force, progress=not quiet,
                            on_result=hook)
        written = chosen.finish(results, ctx)
        hook.raise_first()
        if similarity:
            from grader.report.similar import write_similar
            written += write_similar(subs, a, out)[1][:2]  # the CSV and JSON, not each page
    except GraderError as exc:
        _fail(exc)
        return
    to_stderr = chosen.stdout_is_taken
    for path in written:
        click.echo(f"wrote {path}", err=True)
    click.echo(batch.summary(results, a, out), err=to_stderr)
    sys.exit(_grade_exit_code(results, fail_under))


class _StudentHook:
    """Feeds each result to the writers as it is graded; an error is kept for the end,
    so that one writer's problem does not stop the batch."""

    def __init__(self, chosen: Writers, ctx: Context) -> None:
        self.chosen, self.ctx = chosen, ctx
        self.errors: list[GraderError] = []

    def __call__(self, result: SubmissionResult) -> None:
        try:
            self.chosen.student(result, self.ctx)
        except GraderError as exc:
            self.errors.append(exc)

    def raise_first(self) -> None:
        if self.errors:
            raise self.errors[0]


def _grade_exit_code(results: Sequence[SubmissionResult], fail_under: float | None) -> int:
    """0 whenever grading ran, unless --fail-under: then 1 when a submission scores below
    it, and 2 when the grader failed on one (its score is not a score)."""
    if fail_under is None:
        return ExitCode.OK
    ungradable = [r.student for r in results if not r.gradable]
    below = [r for r in results if r.gradable and r.score < fail_under]
    for r in below:
        click.echo(f"--fail-under {fail_under:g}: {r.student} scored {r.score:g}/{r.max_score:g}", err=True)
    if ungradable:
        click.echo(f"--fail-under: the grader failed on {', '.join(ungradable)}: no score to compare",
                   err=True)
        return ExitCode.GRADER_ERROR
    return ExitCode.TESTS_FAILED if below else ExitCode.OK


@main.command()
@click.option("--out", type=click.Path(path_type=Path), default=Path("reports"), show_default=True,
              help="the reports folder `grader grade` wrote")
@click.option("--overrides", "overrides_path", type=click.Path(path_type=Path), default=None,
              help="overrides.yaml: the instructor's points and comments (the whole set: "
                   "overrides no longer in it are undone)")
def report(out: Path, overrides_path: Path | None) -> None:
    """Re-render --out from its result.json files, applying --overrides; runs no student code."""
    from grader.report.overrides import read_overrides
    from grader.report.writers.reports import rerender

    try:
        overrides = None if overrides_path is None else (overrides_path, read_overrides(overrides_path))
        before, results = rerender(out, overrides)
    except GraderError as exc:
        _fail(exc)
        return
    for old, new in zip(before, results):
        if old.score != new.score:
            click.echo(f"{new.student}: {old.score:g} -> {new.score:g} / {new.max_score:g}")
    click.echo(f"{len(results)} result(s) rewritten in {out}/ (result.json, report.html, "
               "grades.csv, index.html); no student code was run")


@main.command()
@click.argument("path", type=click.Path(path_type=Path), default=Path("."))
@click.option("--assignment", "assignment_arg", help="assignment.yaml path, or a name under ./assignments/")
@click.option("--sandbox", type=click.Choice(["auto", "bwrap", "process"]), default="auto", show_default=True)
@click.option("--html", "html_path", type=click.Path(path_type=Path), default=None,
              help="where to write the HTML report [default: PATH/report.html]")
@click.option("--exercise", "exercise_ids", multiple=True, metavar="ID",
              help="check only this exercise (repeatable), e.g. --exercise causal_mask")
def check(path: Path, assignment_arg: str | None, sandbox: str, html_path: Path | None,
          exercise_ids: tuple[str, ...]) -> None:
    """Run the public tests on your own work; exit 0 when they all pass."""
    from grader.batch.prepare import load_assignment, sandbox_for
    from grader.intake.discover import discover

    try:
        config = RunConfig(assignment=_find_assignment(assignment_arg, path), isolation=sandbox,
                           public=True, exercises=exercise_ids)
        a = load_assignment(config)
        _require_work(path, a)
        subs = discover(path, a)
        if len(subs) != 1:
            raise UsageError(f"{path} holds {len(subs)} submissions; `grader check` takes one")
        with sandbox_for(a, config, prewarm=False, spare=False) as box:  # the zygote starts importing
            import torch  # ... while this process does the same

            from grader.batch.pipeline import grade_submission

            torch.set_num_threads(1)
            result = grade_submission(subs[0], a, box, config)
    except GraderError as exc:
        _fail(exc)
        return
    from grader.report.files import write_report_html
    from grader.report.terminal import format_check_table

    target = html_path or ((path if path.is_dir() else path.parent) / "report.html")
    write_report_html(result, target)
    if exercise_ids:
        click.echo(f"checked only: {', '.join(ex.id for ex in a.exercises)}\n")
    click.echo(format_check_table(result, color=sys.stdout.isatty()))
    click.echo(f"\nreport: {target}")
    sys.exit(ExitCode.OK if _all_public_passed(result) else ExitCode.TESTS_FAILED)


def _all_public_passed(result: SubmissionResult) -> bool:
    return all(t.passed for ex in result.exercises for t in ex.tests)


def _find_assignment(arg: str | None, path: Path) -> Path:
    """Next to the work, in a parent folder, or under ./assignments/. Finding none is a
    usage error: `check` is run in the wrong folder."""
    if arg is not None:
        return assignment_mod.resolve(arg, Path.cwd())
    start = (path if path.is_dir() else path.parent).resolve()
    for folder in (start, *start.parents):
        if (folder / "assignment.yaml").is_file():
            return folder / "assignment.yaml"
        found = sorted((folder / "assignments").glob("*/assignment.yaml"))
        if len(found) == 1:
            return found[0]
    if not any((Path.cwd() / "assignments").glob("*/assignment.yaml")):
        raise UsageError(f"no assignment.yaml in {start} or its parents: run `grader check` in "
                         "your kit folder (the one with assignment.yaml), or pass "
                         "--assignment PATH/TO/assignment.yaml")
    return assignment_mod.resolve(None, Path.cwd())


def _require_work(path: Path, a: assignment_mod.Assignment) -> None:
    """The kit folder before a starter was copied into it: say what to do, rather than
    check its public/ and starter/ folders as two submissions."""
    if not path.is_dir() or path.resolve() != a.root:
        return
    if any((path / name).exists() for name in (a.module_name, a.notebook_name, a.answers_name)):
        return
    starters = [f"{f.parent.name}/{f.name}" for f in a.starter
                if f.name in (a.module_name, a.notebook_name) and f.is_file()]
    how = (f"copy {' or '.join(starters)} there and fill in its TODOs" if starters
           else f"write {a.module_name} or {a.notebook_name} in it")
    raise UsageError(f"no {a.module_name} or {a.notebook_name} in {path.resolve()} yet: {how} "
                     "(see README.md)")


@main.command()
@click.argument("assignment_arg", required=False)
@click.option("--sandbox", type=click.Choice(["auto", "bwrap", "process"]), default="auto", show_default=True)
@click.option("--jobs", type=int, default=None)
@click.option("--answers-only", is_flag=True,
              help="only the schema, the answer key and its labelled answers; grade no code")
def validate(assignment_arg: str | None, sandbox: str, jobs: int | None, answers_only: bool) -> None:
    """Check an assignment: schema, files, key, labelled answers, reference = full marks,
    mutants caught."""
    from grader.sandbox.host import Isolation
    from grader.validate import validate_assignment

    try:
        a = assignment_mod.load(assignment_mod.resolve(assignment_arg, Path.cwd()))
        report = validate_assignment(a, Isolation(sandbox), jobs or os.cpu_count() or 1, answers_only)
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


@main.command()
@click.argument("assignment_args", nargs=-1)
@click.option("--requirements", is_flag=True,
              help="print only the requirements, one per line, for `pip install`")
def environment(assignment_args: tuple[str, ...], requirements: bool) -> None:
    """The packages student code may import (each assignment's `environment:`), and
    whether they are installed here; exit 1 when one is missing or of another version."""
    from grader.environment import installed_problems, merged_requirements

    try:
        found = [assignment_mod.load(assignment_mod.resolve(arg, Path.cwd()), require_hidden=False)
                 for arg in (assignment_args or (None,))]
        envs = [a.environment for a in found if a.environment is not None]
        wanted = merged_requirements(envs)
    except (GraderError, ValueError) as exc:
        _fail(exc if isinstance(exc, GraderError) else UsageError(str(exc)))
        return
    if requirements:
        for line in wanted:
            click.echo(line)
        return
    if not wanted:
        click.echo("no environment declared: student code may import whatever grader's Python has")
    lines, problems = installed_problems(wanted)
    for line in lines:
        click.echo(line)
    for p in problems:
        click.secho(f"  - {p}", fg="red")
    sys.exit(ExitCode.TESTS_FAILED if problems else ExitCode.OK)


@main.command()
@click.option("--out", type=click.Path(path_type=Path), default=Path("reports"), show_default=True,
              help="the reports folder `grader grade` wrote")
@click.option("--submissions", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="the folder `grader grade` graded: each student's answers.yaml gives the "
                   "answers' text (result.json does not keep it)")
@click.option("--overrides", "overrides_path", type=click.Path(path_type=Path, dir_okay=False),
              default=None, help="where decisions are saved [default: overrides.yaml next to --out]")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="the port on 127.0.0.1 (0: any free one)")
@click.option("--no-browser", is_flag=True, help="only print the address, do not open a browser")
def review(out: Path, submissions: Path | None, overrides_path: Path | None, port: int,
           no_browser: bool) -> None:
    """Grade the class's written answers by hand, each kind once, on a local page; every
    decision goes to overrides.yaml and the reports are rendered again. Runs no student code."""
    from grader.review.server import serve

    try:
        serve(out, overrides_path or out.resolve().parent / "overrides.yaml", submissions, port,
              not no_browser, click.echo)
    except GraderError as exc:
        _fail(exc)


from grader.cli_similar import similar  # noqa: E402  (cli.py is at its size limit)

main.add_command(similar)


def entry() -> None:
    """The console script: run the command, then exit without the interpreter's
    teardown of torch (~0.5 s of a student's wait in `grader check`). Everything is
    written and every sandbox stopped by the time a command returns or exits."""
    try:
        main()
        code: int = 0
    except SystemExit as exc:
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
