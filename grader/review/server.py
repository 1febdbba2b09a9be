"""`grader review`: a local page where a person grades each kind of written answer once.

    grader review --out reports --submissions submissions [--overrides PATH] [--port 0] [--no-browser]

It reads every reports/<student>/result.json (and the answers' text from each student's
answers.yaml: result.json does not keep it), groups the written answers of each
question across the class (`grader.review.groups`), and serves one page on 127.0.0.1.
Each decision (a score and a comment for a group) is POSTed back, saved at once to
overrides.yaml, atomically, as one entry per student of the group, and the reports are
rendered again from result.json through the functions `grader report --overrides` uses.

Security: the server listens on 127.0.0.1 only; every request must carry the random
token printed with the address (`/<token>/`), name this server in `Host` (no DNS
rebinding), and a POST must come from the page itself (`Origin`, `Sec-Fetch-Site`, a
JSON body, so a cross-site form cannot send one). The page is the only thing served:
no file is ever read by URL. Student text is escaped by Jinja; the one script is ours,
allowed by its hash in the Content-Security-Policy. Nothing here runs student code.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import math
import secrets
import threading
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from markupsafe import Markup

from grader.errors import GraderError, UsageError
from grader.report import overrides as ov
from grader.report.formatting import fmt_points
from grader.report.html import ENV, TEMPLATES
from grader.results import SubmissionResult
from grader.review.groups import (
    Decision,
    Group,
    answer_texts,
    collect,
    decisions,
    group_answers,
    read_decisions,
    save_decision,
)

__all__ = ["ReviewState", "make_server", "rerender", "serve"]

HOST = "127.0.0.1"
MAX_BODY = 64 * 1024
MAX_COMMENT = 2000


def rerender(out: Path, overrides_path: Path) -> list[SubmissionResult]:
    """What `grader report --out OUT --overrides PATH` does: every result.json read back,
    the whole overrides file applied (checked first), result.json and report.html
    rewritten where a result changed, grades.csv and index.html always."""
    from grader.report.writers import reports

    overrides = (overrides_path, read_decisions(overrides_path))
    return reports.rerender(out, overrides, only_changed=True)[1]


# ------------------------------------------------------------------ the page's data


@dataclass(frozen=True)
class GroupView:
    group: Group
    decision: Decision | None
    label: str


@dataclass(frozen=True)
class QuestionView:
    id: str
    prompt: str
    groups: tuple[GroupView, ...]

    @property
    def answers(self) -> int:
        return sum(len(v.group.answers) for v in self.groups)

    @property
    def flagged(self) -> int:
        return sum(v.group.flagged for v in self.groups)


def decision_label(decision: Decision | None, group: Group) -> str:
    if decision is None:
        return "not decided"
    said = f"decided: {fmt_points(decision.points)} / {fmt_points(group.max_score)}"
    if decision.comment:
        said += f" · “{decision.comment}”"
    if decision.mixed:
        said = (f"mixed: {decision.decided} of {len(group.answers)} students have an override "
                f"(first: {said.removeprefix('decided: ')}); a new decision sets them all")
    return said


class ReviewState:
    """The class's groups (fixed while the server runs) and the decisions, which live in
    overrides.yaml and are read from it for every page, so a reload shows them."""

    def __init__(self, out: Path, overrides_path: Path, submissions: Path | None) -> None:
        from grader.report.writers.reports import read_reports

        self.out, self.overrides_path = out, overrides_path
        self.lock = threading.Lock()
        results = read_reports(out)
        ov.check_targets(results, read_decisions(overrides_path), overrides_path)
        texts = answer_texts(results, submissions)
        self.texts_known = any(t is not None for t in texts.values())
        self.assignment = results[0].assignment
        self.students = len(results)
        self.groups = group_answers(collect(results, texts))
        self.by_id = {g.id: g for g in self.groups}
        if not self.groups:
            raise UsageError(f"no written answers in {out}/: nothing to review")

    def questions(self) -> list[QuestionView]:
        made = decisions(self.groups, read_decisions(self.overrides_path))
        per: dict[str, list[GroupView]] = {}
        for g in self.groups:
            d = made.get(g.id)
            per.setdefault(g.question, []).append(GroupView(g, d, decision_label(d, g)))
        return [QuestionView(q, views[0].group.prompt, tuple(views)) for q, views in per.items()]

    def page(self) -> str:
        with self.lock:
            questions = self.questions()
        views = [v for q in questions for v in q.groups]
        script, _ = page_script()
        return ENV.get_template("review.html").render(
            assignment=self.assignment, questions=questions, students=self.students,
            n_groups=len(views), decided=sum(v.decision is not None for v in views),
            flagged=sum(v.group.flagged for v in views), texts_known=self.texts_known,
            overrides_path=str(self.overrides_path), out=str(self.out), script=script)

    def decide(self, group_id: Any, points: Any, comment: Any) -> dict[str, Any]:
        """Save one decision (points None: remove it) and re-render the reports."""
        group = self.by_id.get(group_id) if isinstance(group_id, str) else None
        if group is None:
            raise ValueError("no such group (reload the page)")
        if points is not None:
            if isinstance(points, bool) or not isinstance(points, (int, float)) or not math.isfinite(points):
                raise ValueError("the score must be a number")
            if not 0 <= points <= group.max_score + 1e-9:
                raise ValueError(f"the score must be between 0 and {fmt_points(group.max_score)}")
        if not isinstance(comment, str) or len(comment) > MAX_COMMENT:
            raise ValueError(f"the comment must be text of at most {MAX_COMMENT} characters")
        with self.lock:
            try:
                save_decision(self.overrides_path, group.question, group.students,
                              None if points is None else float(points), comment.strip())
            except yaml.YAMLError as exc:
                raise ov.OverridesError(f"{self.overrides_path}: not valid YAML, not changed: "
                                        f"{exc}") from None
            try:
                rerender(self.out, self.overrides_path)
            except GraderError as exc:
                raise ov.OverridesError(f"saved to {self.overrides_path}, but the reports could "
                                        f"not be rendered again: {exc}") from None
            views = [v for q in self.questions() for v in q.groups]
        mine = next(v for v in views if v.group.id == group.id)
        d = mine.decision
        return {"ok": True, "group": group.id, "label": mine.label, "decided": d is not None,
                "points": None if d is None else d.points, "comment": "" if d is None else d.comment,
                "decided_groups": sum(v.decision is not None for v in views)}


@functools.lru_cache(maxsize=1)
def page_script() -> tuple[Markup, str]:
    """Our script (a package file) and its CSP hash source."""
    text = (TEMPLATES / "review.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
    return Markup(text), f"'sha256-{digest}'"


# ------------------------------------------------------------------ the server


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: ReviewState
    token: str
    log: Callable[[str], None]

    @property
    def hosts(self) -> tuple[str, ...]:
        port = self.server_address[1]
        return (f"{HOST}:{port}", f"localhost:{port}")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "grader-review"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the default line holds the token

    def do_GET(self) -> None:
        rest = self._route()
        if rest == "":
            self._send(200, self.server.state.page().encode("utf-8"), "text/html; charset=utf-8")
        elif rest is not None:
            self._error(404, "not found")

    def do_POST(self) -> None:
        rest = self._route()
        if rest is None:
            return
        if rest != "decide":
            self._error(404, "not found")
            return
        origin = self.headers.get("Origin")
        site = self.headers.get("Sec-Fetch-Site")
        if origin not in tuple(f"http://{h}" for h in self.server.hosts) or site not in (None, "same-origin"):
            self._error(403, "cross-origin request refused")
            return
        if (self.headers.get("Content-Type") or "").split(";")[0].strip() != "application/json":
            self._error(415, "send JSON")
            return
        try:
            length = int(self.headers.get("Content-Length") or "")
        except ValueError:
            self._error(411, "Content-Length needed")
            return
        if not 0 < length <= MAX_BODY:
            self._error(413, "request too large")
            return
        try:
            body = json.loads(self.rfile.read(length).decode("utf-8"))
            if not isinstance(body, dict):
                raise ValueError("expected a JSON object")
            answer = self.server.state.decide(body.get("group"), body.get("points"),
                                              body.get("comment", ""))
        except (ValueError, UnicodeDecodeError) as exc:
            self._error(400, str(exc))
            return
        except GraderError as exc:
            self._error(500, str(exc))
            return
        self.server.log(f"saved {answer['label']} for {len(self.server.state.by_id[answer['group']].answers)} "
                        f"student(s) of {self.server.state.by_id[answer['group']].question}")
        self._send(200, json.dumps(answer).encode("utf-8"), "application/json")

    def _route(self) -> str | None:
        """What follows /<token>/ in the path, or None once an error has been sent."""
        if self.headers.get("Host") not in self.server.hosts:
            self._error(421, "this server answers only to its own address")
            return None
        parts = urlsplit(self.path).path.split("/", 2)
        token = parts[1] if len(parts) > 1 else ""
        if not hmac.compare_digest(token.encode("utf-8", "replace"), self.server.token.encode()):
            self._error(403, "forbidden: use the address `grader review` printed")
            return None
        if len(parts) == 2:
            self.send_response(308)
            self.send_header("Location", f"/{self.server.token}/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return parts[2]

    def _error(self, code: int, message: str) -> None:
        self._send(code, json.dumps({"ok": False, "error": message}).encode("utf-8"), "application/json")

    def _send(self, code: int, body: bytes, ctype: str) -> None:
        _, script_hash = page_script()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy",
                         f"default-src 'none'; script-src {script_hash}; style-src 'unsafe-inline'; "
                         "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
                         "frame-ancestors 'none'")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.end_headers()
        self.wfile.write(body)


def make_server(state: ReviewState, port: int = 0,
                log: Callable[[str], None] = lambda line: None) -> tuple[_Server, str]:
    """The server (not started) and the page's address, token included."""
    try:
        server = _Server((HOST, port), _Handler)
    except OSError as exc:
        raise UsageError(f"cannot listen on {HOST}:{port}: {exc.strerror}") from None
    server.state, server.token, server.log = state, secrets.token_urlsafe(24), log
    return server, f"http://{HOST}:{server.server_address[1]}/{server.token}/"


def serve(out: Path, overrides_path: Path, submissions: Path | None, port: int,
          open_browser: bool, echo: Callable[[str], None]) -> None:
    """Serve until Ctrl+C."""
    state = ReviewState(out, overrides_path, submissions)
    server, url = make_server(state, port, echo)
    if not state.texts_known:
        echo("note: these results were written without the answers' text; pass --submissions "
             "DIR (the folder `grader grade` graded) to see and group them")
    echo(f"{len(state.groups)} group(s) of written answers; decisions go to {overrides_path}")
    echo(f"review page: {url}")
    echo("Ctrl+C stops the server")
    thread = threading.Thread(target=server.serve_forever, name="grader-review", daemon=True)
    thread.start()
    if open_browser:
        webbrowser.open(url)
    try:
        while thread.is_alive():
            thread.join(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
