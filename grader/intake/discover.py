"""Finding submissions: folders per student, or single .py/.ipynb files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.assignment import Assignment
from grader.errors import NoSubmissionsFound
from grader.intake import read

CODE_SUFFIXES = (".py", ".ipynb")


@dataclass(frozen=True)
class Submission:
    id: str
    """The student id: the folder's name, or the single file's stem."""
    path: Path
    """The folder, or the single file."""
    module: Path | None
    notebook: Path | None
    answers: Path | None
    notices: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        chosen = self.notebook or self.module
        return chosen.name if chosen else self.id

    def files(self) -> list[Path]:
        return [p for p in (self.module, self.notebook, self.answers) if p is not None]

    def digest(self) -> str:
        """Hash of the submission's content, for resuming an interrupted batch."""
        return read.digest(self.files())


def discover(target: Path, assignment: Assignment) -> list[Submission]:
    """All submissions under `target`, or `target` itself when it is one."""
    if target.is_symlink():
        raise NoSubmissionsFound(f"{target} is a symbolic link; pass the real folder")
    if target.is_file():
        return [_single_file(target, assignment)]
    if not target.is_dir():
        raise NoSubmissionsFound(f"{target} does not exist")
    if _is_submission_folder(target, assignment):
        return [_folder(target, assignment)]
    found = [s for entry in sorted(target.iterdir()) if (s := _entry(entry, assignment))]
    if not found:
        raise NoSubmissionsFound.in_folder(target)
    return _unique_ids(found)


def _entry(entry: Path, assignment: Assignment) -> Submission | None:
    if entry.name.startswith((".", "_")):
        return None
    if entry.is_symlink():
        return Submission(entry.name, entry, None, None, None,
                          (f"{entry.name} is a symbolic link; the grader does not follow links",))
    if entry.is_dir():
        return _folder(entry, assignment)
    if entry.suffix in CODE_SUFFIXES:
        return _single_file(entry, assignment)
    return None


def _is_submission_folder(folder: Path, a: Assignment) -> bool:
    names = {a.module_name, a.notebook_name, a.answers_name}
    return any((folder / n).exists() or (folder / n).is_symlink() for n in names)


def _folder(folder: Path, a: Assignment) -> Submission:
    notices: list[str] = []
    module = _regular(folder / a.module_name, notices)
    notebook = _regular(folder / a.notebook_name, notices)
    answers = _regular(folder / a.answers_name, notices)
    if module and notebook:
        notices.append(f"both {a.module_name} and {a.notebook_name} were handed in: "
                       f"the notebook was graded, {a.module_name} was ignored")
        module = None
    if not module and not notebook:
        notices.append(f"no {a.module_name} or {a.notebook_name} in {folder.name}/")
    return Submission(folder.name, folder, module, notebook, answers, tuple(notices))


def _regular(path: Path, notices: list[str]) -> Path | None:
    if path.is_symlink():
        notices.append(f"{path.name} is a symbolic link; the grader does not follow links")
        return None
    return path if path.is_file() else None


def _single_file(path: Path, a: Assignment) -> Submission:
    if path.suffix == ".ipynb":
        return Submission(path.stem, path, None, path, None)
    return Submission(path.stem, path, path, None, None)


def _unique_ids(subs: list[Submission]) -> list[Submission]:
    seen: dict[str, int] = {}
    out = []
    for s in subs:
        if s.id in seen:
            s = Submission(s.path.name, s.path, s.module, s.notebook, s.answers,
                           s.notices + (f"another submission is also named {s.id!r}; "
                                        f"this one is listed as {s.path.name!r}",))
        seen[s.id] = 1
        out.append(s)
    return out
