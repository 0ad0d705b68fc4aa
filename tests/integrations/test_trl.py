"""taskgym under TRL 1.16 for real: ``GRPOTrainer`` trains a tiny model on CPU for a few
steps against envs of two domains (coding and finance), with tool calls that really run in
the sandbox; and the ``AsyncGRPOTrainer`` constraints without vLLM (the factory pickled into a
spawned child that runs episodes on a thread pool).

The model is built here: random weights from a small Qwen2 config, a byte-level BPE tokenizer
trained here, and TRL's own shipped ``qwen2_5.jinja`` chat template (so TRL recognises the
tool-call format). Nothing is downloaded. Its ``generate`` appends scripted replies, chosen by
what the prompt holds, so the completions are known and the tool calls happen.

``scripts/test_trl.sh`` makes the venv (torch, trl, transformers, accelerate, datasets) and
runs these with ``-m trl``; the main run deselects them. Selected without the packages they
fail; they do not skip.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import pickle
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from taskgym.integrations import env_of
from taskgym.integrations.trl import (
    AFTER_END,
    close_environments,
    environment_factories,
    environment_factory,
    make_dataset,
    outcome_of,
    taskgym_metrics,
)
from taskgym.sandbox.host.cgroups import cgroup_parents
from taskgym.sandbox.host.cleanup import runtime_root

pytestmark = [
    pytest.mark.trl, pytest.mark.sandbox, pytest.mark.slow,
    # TRL 1.16 still uses the gradient_checkpointing names transformers 5.25 renamed
    pytest.mark.filterwarnings(
        "ignore:`[a-z_]*gradient_checkpointing[a-z_]*` is deprecated:FutureWarning"),
]

HELLO = Path(__file__).parents[2] / "fixtures" / "coding" / "harbor-hello"
FINANCE_TASK = "co0-01-lookup"  # its answer: 5,930 millions, page 6
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]


def _call(name: str, arguments: dict[str, Any]) -> str:
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": arguments})}\n</tool_call>'


def script(prompt: str, row: int) -> str:
    """The reply to ``prompt`` (the decoded prompt so far): by the task the instruction names
    and the number of tool results already in it. Even rows solve the task, odd rows fail it,
    so each group's rewards differ."""
    turn = prompt.count("<tool_response>")
    right = row % 2 == 0
    if "greeting.txt" in prompt:
        word = "hello" if right else "goodbye"
        replies = [_call("bash", {"command": f"echo {word} > /app/greeting.txt && cat /app/greeting.txt"}),
                   _call("submit", {}),
                   _call("bash", {"command": "echo after the end"})]  # answered with AFTER_END
    else:
        replies = [_call("submit", {"answer": "5,930" if right else "17", "unit": "millions",
                                    "pages": ["annual-report-2025.pdf:6"]})]
    return (replies[turn] if turn < len(replies) else "Done.") + "<|im_end|>"


def tiny_model_and_tokenizer() -> tuple[Any, Any]:
    import trl
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    corpus = [script(f"greeting.txt {'<tool_response>' * t}", r) for t in range(4) for r in range(2)]
    corpus += [script("finance", r) for r in range(2)]
    for factory in environment_factories(["coding-terminal-v0", "finance-pdf-v0"]).values():
        env_class = factory.environment_class()
        corpus += [m.__doc__ or "" for m in vars(env_class).values() if callable(m)]
    corpus += ["You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
               "# Tools\n\nYou may call one or more functions to assist with the user query.",
               '{"type": "function", "function": {"name": "bash", "description": "Run a shell',
               "Write the line `hello` into `/app/greeting.txt`. Answer from the annual report."]
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(corpus * 3, trainers.BpeTrainer(
        vocab_size=700, special_tokens=SPECIAL, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>")
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates" /
                               "qwen2_5.jinja").read_text()

    class ScriptedQwen2(Qwen2ForCausalLM):
        """Random weights; ``generate`` appends the scripted reply to each prompt."""

        def generate(self, input_ids: Any = None, attention_mask: Any = None, **_: Any) -> Any:
            import torch

            prompts = tokenizer.batch_decode(input_ids, skip_special_tokens=False)
            replies = [tokenizer.encode(script(p, row), add_special_tokens=False)
                       for row, p in enumerate(prompts)]
            width = max(map(len, replies))
            padded = [r + [tokenizer.pad_token_id] * (width - len(r)) for r in replies]
            return torch.cat([input_ids, torch.tensor(padded, dtype=input_ids.dtype,
                                                      device=input_ids.device)], dim=1)

    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=8192, tie_word_embeddings=True,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=None)
    model = ScriptedQwen2(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


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


@pytest.fixture(autouse=True)
def silence_experimental(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")


def test_grpo_trainer_trains_on_two_domains_with_the_verified_reward(tmp_path: Path) -> None:
    import torch
    from trl import GRPOConfig, GRPOTrainer

    before = leftovers()
    factories = {"coding": environment_factory("coding-terminal-v0", tasks=str(HELLO)),
                 "finance": environment_factory("finance-pdf-v0")}
    dataset = make_dataset(factories, task_ids={"coding": ["harbor-hello"],
                                                "finance": [FINANCE_TASK]})
    assert sorted(dataset["environment"]) == ["coding", "finance"]
    model, tokenizer = tiny_model_and_tokenizer()
    seen: list[tuple[list[str], list[list[float]], list[Any]]] = []
    tool_replies: list[tuple[str, list[str]]] = []

    class Recording(GRPOTrainer):
        """Keeps each batch's reward columns beside its envs' own verified results, and
        the tool messages of each completion."""

        def _calculate_rewards(self, inputs: Any, prompts: Any, completions: Any,
                               *args: Any) -> Any:
            rewards = super()._calculate_rewards(inputs, prompts, completions, *args)
            seen.append((list(self.reward_func_names), rewards.tolist(),
                         [(type(e).__name__, env_of(e).unwrapped.last_reward, outcome_of(e))
                          for e in self.environments]))
            tool_replies.extend(
                (type(e).__name__, [m["content"] for m in c if m["role"] == "tool"])
                for e, c in zip(self.environments, completions, strict=True))
            return rewards

    args = GRPOConfig(output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4,
                      num_generations=2, max_completion_length=512, learning_rate=1e-2,
                      logging_steps=1, save_strategy="no", report_to="none", use_cpu=True,
                      bf16=False, seed=0, max_tool_calling_iterations=4)
    trainer = Recording(model=model, processing_class=tokenizer, args=args,
                        train_dataset=dataset, reward_funcs=[taskgym_metrics],
                        environment_factory=factories)
    try:
        result = trainer.train()
    finally:
        closed = close_environments(trainer)

    # the loss is finite, and tools ran
    assert math.isfinite(result.training_loss)
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert losses and all(math.isfinite(loss) for loss in losses)
    assert any(entry.get("tools/call_frequency", 0) > 0 for entry in trainer.state.log_history)

    # each row's reward column is its env's verified reward; the other env's column is empty
    assert seen and closed >= 2
    rows = 0
    for names, rewards, envs in seen:
        assert names == ["taskgym_metrics", "CodingTerminalV0", "FinancePdfV0"]
        for row, (class_name, verified, outcome) in zip(rewards, envs, strict=True):
            assert math.isnan(row[0])  # taskgym_metrics scores nothing
            column = names.index(class_name)
            assert verified is not None and verified.verdict == "graded"  # submitted, graded
            assert row[column] == verified.score and outcome.end == "env"
            assert all(math.isnan(v) for i, v in enumerate(row) if i not in (0, column))
            rows += 1
    scores = {(c, v.score) for _names, _rewards, envs in seen for c, v, _o in envs}
    # the tool calls ran in the sandbox: the greeting file the bash call wrote is what the
    # verifier graded 1 (and the wrong one 0); the finance answer likewise
    assert scores == {("CodingTerminalV0", 1.0), ("CodingTerminalV0", 0.0),
                      ("FinancePdfV0", 1.0), ("FinancePdfV0", 0.0)}
    assert rows == 8
    # what the tools answered inside TRL's loop: the sandbox's output, the grade, then the
    # fixed answer to a call after the end
    for class_name, replies in tool_replies:
        if class_name == "CodingTerminalV0":
            assert len(replies) == 3, replies
            assert replies[0].split()[0] in ("hello", "goodbye") and "[exit code 0]" in replies[0]
            assert "[graded:" in replies[1] and replies[2] == AFTER_END
        else:
            assert len(replies) == 1 and "[graded:" in replies[0], replies
    metrics = [e for e in trainer.state.log_history if "taskgym/end_env" in e]
    assert metrics and all(e["taskgym/end_env"] == 1.0 for e in metrics)
    assert all(torch.isfinite(p).all() for p in model.parameters())

    after = leftovers()
    assert {k: sorted(set(v) - set(before[k])) for k, v in after.items()} == {
        "processes": [], "runtime dirs": [], "cgroups": []}


def run_in_child(factory_bytes: bytes, connection: Any) -> None:
    """What AsyncGRPOTrainer's spawned worker does with a factory: build one env per rollout
    and run reset, the tools and get_reward on a thread pool."""
    factory = pickle.loads(factory_bytes)

    def episode(index: int) -> tuple[int, str, str, str, float | None, int]:
        env = factory()
        instruction = env.reset(prompt=[{"role": "user", "content": ""}])
        word = "hello" if index % 2 == 0 else "nope"
        shown = env.bash(command=f"echo {word} > /app/greeting.txt && cat /app/greeting.txt")
        env.submit()
        after = env.bash(command="echo more")
        reward = env.get_reward()
        env._close()
        return index, instruction, shown, after, reward, os.getpid()

    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            connection.send(("ok", list(pool.map(episode, range(8)))))
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        connection.send(("error", repr(exc)))
    connection.close()


def test_async_grpo_worker_builds_the_pickled_factory_in_a_spawned_child() -> None:
    factory = environment_factory("coding-terminal-v0", tasks=str(HELLO))
    payload = pickle.dumps(factory)  # what AsyncRolloutWorker checks before it spawns
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe(duplex=False)
    process = context.Process(target=run_in_child, args=(payload, child))
    process.start()
    child.close()
    try:
        assert parent.poll(240), "the spawned child reported nothing in 240 s"
        status, results = parent.recv()
    finally:
        process.join(60)
    assert process.exitcode == 0
    assert status == "ok", results
    assert [r[0] for r in results] == list(range(8))
    for index, instruction, shown, after, reward, pid in results:
        assert "greeting.txt" in instruction and pid == process.pid != os.getpid()
        assert shown.startswith("hello" if index % 2 == 0 else "nope")  # ran in the sandbox
        assert after == AFTER_END
        assert reward == (1.0 if index % 2 == 0 else 0.0)


def test_make_dataset_rows_route_and_pick_tasks() -> None:
    single = make_dataset(environment_factory("finance-pdf-v0"), repeat=2, seed=None,
                          prompt="Answer.")
    assert "environment" not in single.column_names
    assert single[0]["prompt"] == [{"role": "user", "content": "Answer."}]
    assert len(single) % 2 == 0 and single["task_id"][0] == FINANCE_TASK
    mixed = make_dataset(environment_factories({"a": "coding-terminal-v0",
                                                "b": "finance-pdf-v0"}),
                         task_ids={"a": ["harbor-hello"]})
    counts = {name: mixed["environment"].count(name) for name in ("a", "b")}
    assert counts["a"] == 1 and counts["b"] == len(single) // 2


def test_one_factory_and_no_dataset_the_env_draws_its_tasks(tmp_path: Path) -> None:
    # the documented five statements, with the tiny model in place of a hub id
    from trl import GRPOConfig, GRPOTrainer

    before = leftovers()
    model, tokenizer = tiny_model_and_tokenizer()
    trainer = GRPOTrainer(model, processing_class=tokenizer,
                          args=GRPOConfig(output_dir=str(tmp_path), max_steps=1,
                                          per_device_train_batch_size=2, num_generations=2,
                                          max_completion_length=512, report_to="none",
                                          use_cpu=True, save_strategy="no", logging_steps=1),
                          environment_factory=environment_factory("coding-terminal-v0",
                                                                  tasks=str(HELLO)))
    result = trainer.train()
    pooled = [e for pool in trainer._environment_pool.values() for e in pool]
    outcomes = [outcome_of(e) for e in trainer.environments]
    assert close_environments(trainer) == len(pooled) >= 2
    assert math.isfinite(result.training_loss)
    # reset drew the task itself (the placeholder row has no task_id) and the episodes ran
    assert [o.end for o in outcomes] == ["env", "env"]
    assert sorted(o.reward for o in outcomes) == [0.0, 1.0]
    rewards = [e["rewards/CodingTerminalV0/mean"] for e in trainer.state.log_history
               if "rewards/CodingTerminalV0/mean" in e]
    assert rewards == [0.5]
    after = leftovers()
    assert {k: sorted(set(v) - set(before[k])) for k, v in after.items()} == {
        "processes": [], "runtime dirs": [], "cgroups": []}
