"""taskgym's agent loop under verl 0.9.1 for real: the registered loop class, built by hydra
from verl's registry and the agent-loop file taskgym writes, with the trainer config the
verl wheel ships (``verl/trainer/config/_generated_ppo_trainer.yaml``, read with OmegaConf),
rows read back through verl's own ``RLHFDataset`` from the parquet file taskgym exports, and a
scripted server manager in place of vLLM: its ``generate`` returns ``TokenOutput`` tokens
that encode hermes tool calls. No Ray cluster, no GPU, nothing downloaded (the tokenizer is
trained here, with TRL's shipped Qwen2.5 template: tests/integrations/trainer_kit.py).

``scripts/test_verl.sh`` makes the venv (verl, torch CPU, transformers < 5.11) and runs these
with ``-m verl``; the main run deselects them. Selected without the packages they fail; they
do not skip.
"""

from __future__ import annotations

import asyncio
import copy
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from trainer_kit import PASS_EVERYTHING, hermes_call, leftovers, train_tokenizer  # noqa: E402

from taskgym.domains.coding import CodingEnv  # noqa: E402
from taskgym.errors import ConfigError, HostResourceError, SandboxError  # noqa: E402
from taskgym.integrations.verl import (  # noqa: E402
    AGENT_NAME,
    dataset_rows,
    write_agent_loop_config,
    write_dataset,
)

pytestmark = [
    pytest.mark.verl, pytest.mark.sandbox, pytest.mark.slow,
    # verl 0.9.1 imports ray's state API from the path ray 2.60 deprecated
    pytest.mark.filterwarnings("ignore:Ray state API is no longer experimental:DeprecationWarning"),
]

HELLO = str(Path(__file__).parents[2] / "fixtures" / "coding" / "harbor-hello")
WRITE = "echo {word} > /app/greeting.txt && cat /app/greeting.txt"
HACK = ("mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt; echo 1 > /app/reward.txt;"
        " echo planted")
END = "<|im_end|>"


def bash(command: str) -> str:
    return hermes_call("bash", {"command": command}) + END


SUBMIT = hermes_call("submit", {}) + END


class ScriptedServer:
    """verl's server manager as the loop sees it: ``generate`` answers each request with the
    next scripted reply, as tokens; it keeps what it was asked and what it answered."""

    def __init__(self, tokenizer: Any, replies: list[str]) -> None:
        self.tokenizer, self.replies = tokenizer, list(replies)
        self.sampling: list[dict[str, Any]] = []
        self.prompts: list[list[int]] = []
        self.answers: list[list[int]] = []

    async def generate(self, request_id: str, *, prompt_ids: list[int],
                       sampling_params: dict[str, Any], **_: Any) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        assert request_id and isinstance(sampling_params, dict)
        self.sampling.append(dict(sampling_params))
        self.prompts.append(list(prompt_ids))
        text = self.replies[len(self.answers)] if len(self.answers) < len(self.replies) else "Done."
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        self.answers.append(ids)
        return TokenOutput(token_ids=ids)


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    corpus = [bash(WRITE.format(word=w)) for w in ("hello", "goodbye")] + [SUBMIT, bash(HACK)]
    corpus += ["Write the line `hello` into `/app/greeting.txt`.", "<tool_response>\n</tool_response>",
               "You are an expert engineer working in a sandboxed Linux workspace."]
    return train_tokenizer(corpus)


def trainer_config(tmp_path: Path, **multi_turn: Any) -> Any:
    """verl's own generated PPO config, with a short rollout."""
    import verl
    from omegaconf import OmegaConf

    config = OmegaConf.load(Path(verl.__file__).parent / "trainer" / "config" /
                            "_generated_ppo_trainer.yaml")
    rollout = config.actor_rollout_ref.rollout
    rollout.prompt_length, rollout.response_length = 2048, 1024
    rollout.multi_turn.enable = True
    for key, value in multi_turn.items():
        rollout.multi_turn[key] = value
    config.data.cache_dir = str(tmp_path / "verl-cache")
    return config


def make_loop(config: Any, tokenizer: Any, server: ScriptedServer, agent_file: Path) -> Any:
    """The loop as verl's AgentLoopWorker makes it: the agent-loop file's entries go into the
    registry, then hydra instantiates the entry for the row's agent_name."""
    import hydra
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import (
        DictConfigWrap,
        ToolListWrap,
        _agent_loop_registry,
    )
    from verl.utils.dataset.rl_dataset import RLHFDataset

    for entry in OmegaConf.load(agent_file):
        _agent_loop_registry[entry.name] = entry
    return hydra.utils.instantiate(
        config=_agent_loop_registry[AGENT_NAME], trainer_config=DictConfigWrap(config=config),
        server_manager=server, tokenizer=tokenizer, processor=None, hf_model_type="qwen2",
        dataset_cls=RLHFDataset, data_config=DictConfigWrap(config.data), tools=ToolListWrap([]))


def verl_rows(config: Any, tokenizer: Any, tmp_path: Path, rows: list[dict[str, Any]]) -> list[Any]:
    """The rows as verl's worker hands them to ``run``: written by taskgym, read by verl's
    ``RLHFDataset`` (the fields a batch carries outside its tensors)."""
    from verl.utils.dataset.rl_dataset import RLHFDataset

    path = write_dataset(tmp_path / "train.parquet", rows)
    dataset = RLHFDataset(data_files=[str(path)], tokenizer=tokenizer, config=config.data)
    return [{k: v for k, v in dataset[i].items() if k not in ("dummy_tensor",)}
            for i in range(len(dataset))]


def play(tmp_path: Path, tokenizer: Any, replies: list[str], *, row: dict[str, Any] | None = None,
         loop_kwargs: dict[str, Any] | None = None, **multi_turn: Any) -> tuple[Any, ScriptedServer]:
    config = trainer_config(tmp_path, **multi_turn)
    server = ScriptedServer(tokenizer, replies)
    agent_file = write_agent_loop_config(tmp_path / "agent_loops.yaml", **(loop_kwargs or {}))
    kwargs = row or verl_rows(config, tokenizer, tmp_path,
                              dataset_rows("coding-terminal-v0", make_kwargs={"tasks": HELLO}))[0]

    async def trajectory() -> Any:  # made on the running loop, as verl's worker makes it
        loop = make_loop(config, tokenizer, server, agent_file)
        return await loop.run({"temperature": 1.0}, **kwargs)

    output = asyncio.run(trajectory())
    return output, server


@pytest.fixture()
def made(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every env the loop makes (to read its verifier's own result afterwards)."""
    import taskgym.integrations.verl.agent_loop as agent_loop

    envs: list[Any] = []
    real = agent_loop.make

    def recording(env_id: str, **kwargs: Any) -> Any:
        envs.append(real(env_id, **kwargs))
        return envs[-1]

    monkeypatch.setattr(agent_loop, "make", recording)
    return envs


def segments(output: Any, server: ScriptedServer) -> list[tuple[int, list[int]]]:
    """The response cut where the mask changes: (mask value, tokens) runs."""
    runs: list[tuple[int, list[int]]] = []
    for token, bit in zip(output.response_ids, output.response_mask, strict=True):
        if runs and runs[-1][0] == bit:
            runs[-1][1].append(token)
        else:
            runs.append((bit, [token]))
    return runs


@pytest.mark.parametrize(("word", "score"), [("hello", 1.0), ("goodbye", 0.0)])
def test_a_trajectory_runs_the_tools_in_the_sandbox_and_scores_the_verified_reward(
        tmp_path: Path, tokenizer: Any, made: list[Any], word: str, score: float) -> None:
    before = leftovers()
    output, server = play(tmp_path, tokenizer, [bash(WRITE.format(word=word)), SUBMIT])

    # one env for the whole trajectory, its verifier's own result is the score
    assert len(made) == 1
    verified = made[0].unwrapped.last_reward
    assert verified.verdict == "graded" and output.reward_score == verified.score == score
    assert output.extra_fields["taskgym_verdict"] == "graded"
    assert output.extra_fields["taskgym_reward"] == score
    assert output.extra_fields["taskgym_components"] == dict(verified.components)
    assert output.extra_fields["taskgym_ended"] == "submitted"
    assert output.extra_fields["taskgym_steps"] == 2 and output.num_turns == 4
    # the bash call ran in the sandbox: its output is the tool message the model saw next
    tool = [m for m in output.extra_fields["taskgym_messages"] if m["role"] == "tool"]
    assert tool[0]["content"].startswith(f"{word}\n") and "[exit code 0]" in tool[0]["content"]
    # the response is the model's two replies with the rendered tool message between them,
    # and the mask is 1 exactly on the model's tokens
    runs = segments(output, server)
    assert [bit for bit, _ in runs] == [1, 0, 1]
    assert runs[0][1] == server.answers[0] and runs[2][1] == server.answers[1]
    between = tokenizer.decode(runs[1][1])
    assert "<tool_response>" in between and f"{word}\n" in between and END not in between[-12:]
    assert server.prompts[1] == output.prompt_ids + server.answers[0] + runs[1][1]
    assert output.prompt_ids == server.prompts[0]
    # the tool schemas reached the prompt through the chat template
    prompt = tokenizer.decode(output.prompt_ids)
    assert '"name": "bash"' in prompt and "greeting.txt" in prompt
    assert output.metrics.generate_sequences > 0 and output.metrics.tool_calls > 0
    # the env is closed: no sandbox of this process is left
    after = leftovers()
    assert {k: sorted(set(v) - set(before[k])) for k, v in after.items()} == {
        "processes": [], "runtime dirs": [], "cgroups": []}


@pytest.mark.hacks
def test_a_planted_reward_file_through_the_loop_scores_zero(
        tmp_path: Path, tokenizer: Any, made: list[Any]) -> None:
    output, _server = play(tmp_path, tokenizer, [bash(HACK), SUBMIT])
    tool = [m for m in output.extra_fields["taskgym_messages"] if m["role"] == "tool"]
    assert "planted" in tool[0]["content"]  # the hack ran
    assert output.reward_score == 0.0 == made[0].unwrapped.last_reward.score
    assert output.extra_fields["taskgym_verdict"] == "graded"


@pytest.mark.hacks
def test_a_planted_conftest_through_the_loop_scores_zero(
        tmp_path: Path, tokenizer: Any, answer_task: Any) -> None:
    task = str(answer_task(tmp_path / "task"))
    config = trainer_config(tmp_path)
    row = verl_rows(config, tokenizer, tmp_path,
                    dataset_rows("coding-terminal-v0", make_kwargs={"tasks": task}))[0]
    plant = [hermes_call("write_file", {"path": path, "content": PASS_EVERYTHING}) + END
             for path in ("/app/conftest.py", "/app/tests/conftest.py")]
    hacked, _ = play(tmp_path / "a", tokenizer,
                     [*plant, bash("echo 41 > /app/answer.txt; printf '[pytest]\\n' > /app/pytest.ini"),
                      SUBMIT], row=row)
    tool = [m["content"] for m in hacked.extra_fields["taskgym_messages"] if m["role"] == "tool"]
    assert not tool[0].startswith("error") and hacked.extra_fields["taskgym_steps"] == 4
    assert (hacked.reward_score, hacked.extra_fields["taskgym_verdict"]) == (0.0, "graded")
    solved, _ = play(tmp_path / "b", tokenizer, [bash("echo 42 > /app/answer.txt"), SUBMIT],
                     row=row)
    assert solved.reward_score == 1.0  # the same path scores a real solution


def test_a_no_verdict_episode_is_masked_out_not_scored(
        tmp_path: Path, tokenizer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np
    import torch
    from verl.trainer.ppo.core_algos import agg_loss, compute_grpo_outcome_advantage

    def no_grader(self: CodingEnv, task: Any, session: Any) -> Any:
        raise HostResourceError("could not start bwrap: no file descriptor left")

    graded, _ = play(tmp_path / "a", tokenizer, [bash(WRITE.format(word="hello")), SUBMIT])
    monkeypatch.setattr(CodingEnv, "verify", no_grader)
    failed, _ = play(tmp_path / "b", tokenizer, [bash(WRITE.format(word="hello")), SUBMIT])

    fields = failed.extra_fields
    assert (fields["taskgym_verdict"], fields["taskgym_failure"]) == ("none", "host_resources")
    assert fields["taskgym_reward"] is None and fields["taskgym_ended"] == "environment_failed"
    # verl needs a number (else its reward loop makes one up): the placeholder, with no token
    # of the trajectory left to train on
    assert failed.reward_score == 0.0 and set(failed.response_mask) == {0}
    assert len(failed.response_ids) == len(graded.response_ids)
    # through verl's own worker code: the outputs padded and batched, the scores on each
    # response's last token, and verl's reward loop never asked (it would make a score up)
    batch = batched(trainer_config(tmp_path), tokenizer, [graded, failed])
    scores, mask = batch.batch["rm_scores"], batch.batch["response_mask"]
    assert scores.sum(-1).tolist() == [1.0, 0.0] and mask[1].sum() == 0 < mask[0].sum()
    assert list(batch.non_tensor_batch["taskgym_verdict"]) == ["graded", "none"]
    # GRPO gives the sample no advantage, and the loss aggregation leaves it out
    advantages, _ = compute_grpo_outcome_advantage(scores, mask.float(),
                                                   np.array(["g", "g"], dtype=object))
    assert torch.count_nonzero(advantages[1]) == 0 and torch.count_nonzero(advantages[0]) > 0
    per_token = torch.ones_like(scores)
    for mode in ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum"):
        alone = agg_loss(per_token[:1], mask[:1].float(), mode)
        together = agg_loss(per_token, mask.float(), mode)
        assert torch.isclose(alone, together), mode


def batched(config: Any, tokenizer: Any, outputs: list[Any]) -> Any:
    """``outputs`` as verl's AgentLoopWorker turns them into a training batch
    (``_agent_loop_postprocess`` for each, then ``_postprocess``), with a reward-loop handle
    that fails the test if asked for a score."""
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    class NoRewardLoop:
        class compute_score:  # noqa: N801 - a Ray method's shape: handle.compute_score.remote
            @staticmethod
            def remote(data: Any) -> Any:
                raise AssertionError("verl's reward loop was asked to score a taskgym trajectory")

    worker = AgentLoopWorker.__new__(AgentLoopWorker)  # its state, without its Ray setup
    worker.config, worker.rollout_config = config, config.actor_rollout_ref.rollout
    worker.tokenizer, worker.processor, worker.mm_processor_kwargs = tokenizer, None, {}
    worker.reward_loop_worker_handles, worker.distillation_enabled = [NoRewardLoop()], False

    async def postprocess() -> Any:
        padded = [await worker._agent_loop_postprocess(o, False, raw_prompt=[]) for o in outputs]
        return worker._postprocess(padded)

    return asyncio.run(postprocess())


def test_rows_pick_task_and_tools_and_the_invalid_call_cap_ends_the_episode(
        tmp_path: Path, tokenizer: Any, made: list[Any]) -> None:
    config = trainer_config(tmp_path)
    rows = dataset_rows("coding-terminal-v0", task_ids=["harbor-hello"], repeat=2,
                        prompt="Be brief.", tool_selection=["bash", "submit"],
                        make_kwargs={"tasks": HELLO})
    read = verl_rows(config, tokenizer, tmp_path, rows)
    assert [r["agent_name"] for r in read] == [AGENT_NAME] * 2
    assert read[1]["extra_info"]["index"] == 1 and read[0]["extra_info"]["task_id"] == "harbor-hello"
    assert read[0]["raw_prompt"] == [{"role": "user", "content": "Be brief."}]
    replies = [hermes_call("write_file", {"path": "/app/greeting.txt", "content": "hello\n"}) + END,
               "<tool_call>\n{not json\n</tool_call>" + END, bash(WRITE.format(word="hello"))]
    output, server = play(tmp_path, tokenizer, replies, row=read[0],
                          loop_kwargs={"max_invalid_turns": 2})
    fields = output.extra_fields
    # write_file is not offered: not in the prompt, and a call of it runs nothing
    prompt = tokenizer.decode(output.prompt_ids)
    assert '"name": "bash"' in prompt and '"name": "write_file"' not in prompt
    assert prompt.count("Be brief.") == 1 and "greeting.txt" in prompt
    tool = [m["content"] for m in fields["taskgym_messages"] if m["role"] == "tool"]
    assert tool == ["error: write_file is not one of the tools of this episode (bash, submit); "
                    "nothing ran"]
    # two replies in a row whose calls all failed end it; what was left is graded (nothing)
    assert len(server.answers) == 2 and fields["taskgym_ended"] == "invalid_calls"
    assert fields["taskgym_steps"] == 0 and output.reward_score == 0.0
    assert fields["taskgym_verdict"] == "graded" and made[0].unwrapped.last_reward.graded
    with pytest.raises(ConfigError, match="write_fil"):
        dataset_rows("coding-terminal-v0", tool_selection=["write_fil"])


def test_limits_from_verls_config_and_the_unsubmitted_policy(
        tmp_path: Path, tokenizer: Any) -> None:
    right = bash(WRITE.format(word="hello"))
    # one assistant turn: the episode ends there and is graded as the policy left it ...
    output, server = play(tmp_path / "a", tokenizer, [right, SUBMIT], max_assistant_turns=1)
    assert len(server.answers) == 1 and output.extra_fields["taskgym_ended"] == "max_turns"
    assert output.reward_score == 1.0 and set(output.response_mask) == {1}
    # ... or scores 0.0 under unsubmitted="zero"
    zero, _ = play(tmp_path / "b", tokenizer, [right, SUBMIT], max_assistant_turns=1,
                   loop_kwargs={"unsubmitted": "zero"})
    assert zero.reward_score == 0.0 and zero.extra_fields["taskgym_verdict"] == "graded"
    # tool text is cut as verl cuts its own tools' text
    cut, _ = play(tmp_path / "e", tokenizer, [right, SUBMIT], max_tool_response_length=4,
                  tool_response_truncate_side="right")
    tool = [m["content"] for m in cut.extra_fields["taskgym_messages"] if m["role"] == "tool"]
    assert tool[0] == "hell...(truncated)" and cut.reward_score == 1.0
    # a reply with no call ends it too
    silent, _ = play(tmp_path / "c", tokenizer, ["Done." + END])
    assert silent.extra_fields["taskgym_ended"] == "no_tool_call"
    # verl's glm format: read as taskgym's glm style, with verl's stop token for it
    glm = copy.deepcopy(tokenizer)
    glm.add_special_tokens({"additional_special_tokens": ["<|observation|>"]})
    observation = glm.convert_tokens_to_ids("<|observation|>")
    glm_call = ("<tool_call>bash\n<arg_key>command</arg_key>\n<arg_value>"
                + WRITE.format(word="hello") + "</arg_value>\n</tool_call><|observation|>")
    read, glm_server = play(tmp_path / "f", glm, [glm_call, "<tool_call>submit\n</tool_call>"],
                            format="glm")
    assert read.reward_score == 1.0 and read.extra_fields["taskgym_steps"] == 2
    assert all(p["stop_token_ids"] == [observation] for p in glm_server.sampling)
    assert "stop_token_ids" not in server.sampling[0]  # hermes: none
    # a format taskgym cannot read is refused when the loop is made
    with pytest.raises(Exception, match="seed"):
        play(tmp_path / "d", tokenizer, [SUBMIT], format="seed")


def test_a_sandbox_that_cannot_start_gives_a_masked_no_verdict_trajectory(
        tmp_path: Path, tokenizer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def cannot_start(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise SandboxError("bwrap: cannot start")

    monkeypatch.setattr(CodingEnv, "areset", cannot_start)
    output, server = play(tmp_path, tokenizer, [SUBMIT])
    assert server.answers == [] and output.response_mask == [0] and output.reward_score == 0.0
    assert output.extra_fields["taskgym_ended"] == "reset_failed"
    assert output.extra_fields["taskgym_verdict"] == "none"
