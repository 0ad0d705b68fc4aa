"""What the tests of the trainers that run taskgym in their own process (TRL, verl, SkyRL) share.

- the tokenizer they build: byte-level BPE trained on the strings given, Qwen's special
  tokens, and TRL 1.16's shipped ``qwen2_5.jinja`` chat template (read from trl's package
  folder without importing trl, so a venv may hold the trl wheel's files with --no-deps);
  nothing is downloaded (needs ``tokenizers`` and ``transformers``);
- :func:`hermes_call`, a tool call as that template writes it;
- :func:`leftovers`, the sandboxes of this process still alive;
- :data:`PASS_EVERYTHING`, a planted ``conftest.py`` that reports every test passed (a hack).

Imported by the tests with this folder on ``sys.path``."""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from taskgym.sandbox.host.cgroups import cgroup_parents
from taskgym.sandbox.host.cleanup import runtime_root

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]
TEMPLATE_TEXT = [
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
    "# Tools\n\nYou may call one or more functions to assist with the user query.",
    '{"type": "function", "function": {"name": "bash", "description": "Run a shell',
]
"""Text the template writes around a chat, worth a few merges in any corpus."""

PASS_EVERYTHING = """import pytest
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""
"""A ``conftest.py`` an agent plants so that every hidden test reports passed: must score 0."""


def hermes_call(name: str, arguments: dict[str, Any]) -> str:
    """A tool call as Qwen2.5's template writes it (the ``hermes`` form)."""
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": arguments})}\n</tool_call>'


def trl_template(name: str = "qwen2_5") -> str:
    """A chat template TRL 1.16 ships (``trl/chat_templates/NAME.jinja``)."""
    spec = importlib.util.find_spec("trl")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("needs the trl==1.16.0 wheel's files (its chat templates)")
    return (Path(next(iter(spec.submodule_search_locations))) / "chat_templates"
            / f"{name}.jinja").read_text()


def train_tokenizer(corpus: Iterable[str], vocab_size: int = 700) -> Any:
    """A ``PreTrainedTokenizerFast`` trained on ``corpus`` (and :data:`TEMPLATE_TEXT`), with
    ``<|im_end|>`` as its end and ``<|endoftext|>`` as its padding, and TRL's Qwen2.5
    template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    texts = [*corpus, *TEMPLATE_TEXT]
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts * 3, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>")
    tokenizer.chat_template = trl_template()
    return tokenizer


def leftovers() -> dict[str, list[str]]:
    """This process's sandboxes still alive: child processes, runtime folders, cgroups
    (counted as tests/sandbox/test_cleanup.py counts them)."""
    prefix = f"{os.getpid()}-"
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[1]) == os.getpid() and fields[0] not in ("Z", "X"):
                children.append(entry.name)
    cgroups = [c.name for parent in cgroup_parents() if parent.is_dir() for c in parent.iterdir()
               if c.is_dir() and c.name.startswith(prefix)]
    dirs = [p.name for p in runtime_root().iterdir() if p.name.startswith(prefix)]
    return {"processes": children, "runtime dirs": dirs, "cgroups": cgroups}
