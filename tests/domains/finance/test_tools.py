"""The finance tools: what they return, and that bad input never raises out of step()."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import taskgym
from taskgym.domains.finance import load_gold
from taskgym.domains.finance.pdf_tools import InfoArgs
from taskgym.domains.finance.tools import finance_tools
from taskgym.sandbox import Session

pytestmark = pytest.mark.sandbox

TWO_DOCUMENTS = "co0-08-multihop"


@pytest.fixture()
def env() -> Iterator[gym.Env[Any, Any]]:
    env = taskgym.make("finance-pdf-v0")
    env.reset(options={"task_id": TWO_DOCUMENTS})
    yield env
    env.close()


def step(env: gym.Env[Any, Any], tool: str, **args: Any) -> tuple[str, dict[str, Any]]:
    obs, reward, terminated, truncated, info = env.step({"tool": tool, "args": args})
    assert (reward, terminated) == (0.0, False)
    return obs["text"], info


def test_pdf_info_lists_every_document_with_a_page_guide(env: gym.Env[Any, Any]) -> None:
    text, info = step(env, "pdf_info")
    assert "error" not in info
    assert "annual-report-" in text and "quarterly-report-" in text
    assert "p1:" in text


def test_read_page_keeps_table_rows_on_one_line(env: gym.Env[Any, Any]) -> None:
    base = env.unwrapped
    gold = load_gold(base.task)
    evidence = gold.evidence[0]
    text, info = step(env, "read_page", page=evidence.page, document=evidence.document)
    assert "error" not in info
    assert f"page {evidence.page} of" in text
    revenue_lines = [line for line in text.splitlines() if line.strip().startswith("Revenue")]
    assert revenue_lines and len(revenue_lines[0].split()) >= 3  # label and both quarters


def test_search_finds_phrases_across_documents(env: gym.Env[Any, Any]) -> None:
    text, _ = step(env, "search", query="Net income")
    assert "annual-report-" in text and "quarterly-report-" in text
    text, _ = step(env, "search", query="previously REPORTED")
    assert "annual-report-" in text and "quarterly-report-" not in text
    text, info = step(env, "search", query="zebra unicorn")
    assert "no page mentions" in text and "error" not in info


def test_extract_tables_returns_cells(env: gym.Env[Any, Any]) -> None:
    text, info = step(env, "extract_tables", page=2, document="quarterly-report-2026-q1.pdf")
    assert "error" not in info
    assert "Revenue |" in text


def test_page_image_returns_a_png(env: gym.Env[Any, Any]) -> None:
    text, info = step(env, "page_image", page=1)
    assert info["images"][0].startswith(b"\x89PNG\r\n\x1a\n")
    assert "PNG" in text


def test_python_runs_in_the_sandbox_with_pdfplumber_and_the_documents(
        env: gym.Env[Any, Any]) -> None:
    text, info = step(env, "python", code=(
        "import glob, pdfplumber\n"
        "for path in sorted(glob.glob('/app/*.pdf')):\n"
        "    with pdfplumber.open(path) as pdf:\n"
        "        print(path, len(pdf.pages))\n"
        "print(round(1234 / 5678 * 100, 1))"))
    assert info["exit_code"] == 0, text
    assert "/app/annual-report-" in text and "21.7" in text


@pytest.mark.parametrize(("tool", "args", "message"), [
    ("read_page", {"page": 0}, "there is no page 0"),
    ("read_page", {"page": -3}, "there is no page -3"),
    ("read_page", {"page": 10**9}, "there is no page"),
    ("read_page", {"page": "two"}, "invalid arguments"),
    ("read_page", {"page": 1, "document": "../../tests/answer.json"}, "no document"),
    ("extract_tables", {"page": 999}, "there is no page"),
    ("page_image", {"page": 2, "document": "other.pdf"}, "no document"),
    ("search", {"query": ""}, "invalid arguments"),
    ("search", {"query": "x" * 10_000}, "invalid arguments"),
    ("pdf_info", {"document": "nope"}, "no document"),
    ("submit", {"pages": "all"}, "invalid arguments"),
    ("submit", {"answer": "1" * 100_000}, "invalid arguments"),
])
def test_bad_input_comes_back_as_an_error_observation(env: gym.Env[Any, Any], tool: str,
                                                      args: dict[str, Any], message: str) -> None:
    text, info = step(env, tool, **args)
    assert message in text
    assert "error" in info


def test_the_answer_files_are_not_in_the_sandbox(env: gym.Env[Any, Any]) -> None:
    base = env.unwrapped
    task_path = str(base.task.path)
    text, info = step(env, "python", code=(
        "import os\n"
        "found = []\n"
        "for root, dirs, files in os.walk('/'):\n"
        "    dirs[:] = [d for d in dirs if os.path.join(root, d) not in ('/proc', '/sys')]\n"
        "    found += [os.path.join(root, f) for f in files if f == 'answer.json']\n"
        f"print('FOUND', found, os.path.exists({task_path!r}), sorted(os.listdir('/app')))"))
    assert info["exit_code"] == 0, text
    assert "FOUND [] False" in text
    assert "tests" not in text.split("FOUND", 1)[1] and "solution" not in text


def test_files_written_in_the_sandbox_do_not_change_the_grade(env: gym.Env[Any, Any]) -> None:
    step(env, "python", code=(
        "import json, os\nos.makedirs('/app/tests', exist_ok=True)\n"
        "json.dump({'kind': 'number', 'value': 1, 'scale': 'units'}, "
        "open('/app/tests/answer.json', 'w'))"))
    obs, reward, terminated, _, info = env.step({"tool": "submit",
                                                 "args": {"answer": "1", "unit": "units"}})
    assert terminated and reward == 0.0


def test_random_actions_never_raise() -> None:
    env = taskgym.make("finance-pdf-v0", max_steps=40)
    try:
        for seed in range(3):
            env.reset(seed=seed)
            env.action_space.seed(seed)
            done = False
            while not done:
                _, _, terminated, truncated, _ = env.step(env.action_space.sample())
                done = terminated or truncated
    finally:
        env.close()


def test_pdf_info_says_when_pages_are_left_out_and_pages_on(tmp_path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for number in range(1, 551):
        pdf.add_page()
        pdf.cell(text="Long filing")
        pdf.ln()
        pdf.cell(text=f"Section heading {number}")
    path = tmp_path / "long-10-k.pdf"
    pdf.output(str(path))
    tools = finance_tools(lambda: [path], _no_session, lambda: 10.0)
    info = next(tool for tool in tools if tool.name == "pdf_info")
    first = info.run(InfoArgs()).text
    assert "long-10-k.pdf: 550 pages" in first
    assert "p300: Section heading 300" in first and "p301:" not in first
    assert "[pages 1-300 of 550 listed; pdf_info(document='long-10-k.pdf', start_page=301)" in first
    rest = info.run(InfoArgs(start_page=301)).text
    assert "p301: Section heading 301" in rest and "p550: Section heading 550" in rest
    assert "p300:" not in rest and "[pages 301-550 of 550 listed]" in rest
    assert "the document ends at page 550" in info.run(InfoArgs(start_page=551)).text


def _no_session() -> Session:
    raise AssertionError("pdf_info needs no sandbox")
