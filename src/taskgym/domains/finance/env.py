"""``finance-pdf-v0``: answer a question about financial filings in PDF form.

The agent reads the documents with tools that run on the host over the cached, trusted
PDFs, computes in a sandboxed ``python``, and submits a value, its unit/scale and the
evidence pages. Grading is a pure function of those strings and the hidden
``tests/answer.json`` (see :mod:`taskgym.domains.finance.answers`); no agent code runs, and
the answer never enters the sandbox.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taskgym.domain import ConfigError, RewardResult, SandboxSpec, Session, Task, TaskEnv, TaskSettings, Tool
from taskgym.domains.finance.answers import GoldAnswer, grade
from taskgym.domains.finance.generators import GENERATORS
from taskgym.domains.finance.tools import Submission, finance_tools
from taskgym.paths import linked_folder

__all__ = ["FinanceEnv", "FinanceSettings", "documents_of", "load_gold"]

ENV_ID = "finance-pdf-v0"


def documents_of(task: Task) -> list[Path]:
    """The task's PDFs: ``[finance] documents`` of task.toml, else every PDF, by name. A
    document not in ``environment/files`` is taken from ``[finance] library``, a folder
    relative to the task folder (filings shared by many tasks, stored once)."""
    files = task.path / "environment" / "files"
    settings = FinanceSettings.of(task)
    names, library = settings.documents, settings.library
    shared = (task.path / library).resolve() if library else None
    if names:
        paths = [files / str(n) if (files / str(n)).is_file() or shared is None
                 else shared / str(n) for n in names]
    else:
        paths = sorted(files.glob("*.pdf"))
    if not paths:
        raise ConfigError(f"task {task.id} has no PDF in {files}")
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        where = f"{files} or {shared}" if shared else str(files)
        hint = (" (the filings of the library are shipped in the package; a checkout without "
                "them needs them copied there)") if shared else ""
        raise ConfigError(f"task {task.id} lists documents missing from {where}: {missing}{hint}")
    return paths


class FinanceSettings(TaskSettings):
    """The ``[finance]`` table of a finance task's task.toml."""

    table = "finance"
    documents: tuple[str, ...] = ()
    """The task's PDFs, by name (by default every PDF of ``environment/files``)."""
    library: str | None = None
    """A folder relative to the task folder holding filings shared by many tasks."""


class FinanceEnv(TaskEnv):
    """Questions about financial PDFs; normalised numbers decide.

    ``tasks`` may also be ``"curated"`` (the default), ``"generated"`` (every family) or
    ``"generated:<family>[,<family>...]"`` (see :data:`GENERATORS`).
    """

    domain = "finance"
    description = "Answer questions about financial PDF filings; normalised numbers decide."
    image = "taskgym/finance-pdf-v0"

    curated = f"{ENV_ID}/tasks"
    generators = GENERATORS
    generate = "taskgym.domains.finance.generators:generate"
    generated_size = 120
    requires = ("pypdfium2", "pdfplumber", "rank_bm25")
    extra = "pdf"
    doctor_modules = ("reportlab", "fpdf2")  # the generators' renderers

    def make_tools(self) -> list[Tool]:
        def documents() -> list[Path]:
            if self.task is None:
                raise ConfigError("no episode is running; call reset() first")
            return documents_of(self.task)

        return [*finance_tools(documents, lambda: self.session, self.command_timeout),
                self.submit_tool("Submit the answer; this ends the episode.", Submission)]

    def sandbox_spec(self, task: Task) -> SandboxSpec:
        return super().sandbox_spec(task).model_copy(update={"host_python": True})

    def workspace_seed(self, task: Task) -> Path | None:
        documents = documents_of(task)  # fails early on a broken task folder
        files = task.path / "environment" / "files"
        if all(p.is_relative_to(files) for p in documents):
            return files
        # environment/files and the library's documents, linked into one cached folder
        own = sorted(p for p in files.rglob("*") if p.is_file()) if files.is_dir() else []
        entries = [(p.relative_to(files).as_posix(), p) for p in own]
        entries += [(p.name, p) for p in documents if not p.is_relative_to(files)]
        return linked_folder("finance/seeds", entries)

    def verify(self, task: Task, session: Session) -> RewardResult:
        gold = load_gold(task)
        submission = self.submission if isinstance(self.submission, Submission) else Submission()
        names = [p.name for p in documents_of(task)]
        return grade(gold, submission.answer, submission.unit, submission.pages, names)

    def oracle_actions(self, task: Task) -> list[dict[str, Any]]:
        solution = Submission.model_validate_json(
            (task.path / "solution" / "answer.json").read_text())
        return [{"tool": "submit", "args": solution.model_dump()}]


def load_gold(task: Task) -> GoldAnswer:
    """The hidden answer of ``task`` (``tests/answer.json``)."""
    path = task.path / "tests" / "answer.json"
    try:
        return GoldAnswer.model_validate_json(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
