"""Train a model with TRL's GRPOTrainer on taskgym envs of two domains.

    pip install "taskgym[trl,pdf]"      # after the torch build for your machine (docs/trainers.md)
    python examples/trl_grpo.py --model Qwen/Qwen3-0.6B --max-steps 50

Each rollout gets its own env from the factory: ``reset`` starts a sandbox and returns the
task's instruction, the model's tool calls run in that sandbox, and ``get_reward`` is the
verifier's score of what the model left (``None``, so left out of training, when the
environment failed instead). The dataset routes each row to its env by name and pins the
task; ``taskgym_metrics`` logs the verifier's components. After training every pooled
sandbox is stopped.

The five statements a user writes, without the options this script adds:

    from trl import GRPOConfig, GRPOTrainer
    from taskgym.integrations.trl import close_environments, environment_factory
    trainer = GRPOTrainer("Qwen/Qwen3-0.6B", args=GRPOConfig(max_steps=50),
                          environment_factory=environment_factory("coding-terminal-v0"))
    trainer.train()
    close_environments(trainer)
"""

from __future__ import annotations

import argparse
import os

from trl import GRPOConfig, GRPOTrainer

from taskgym.integrations.trl import (
    close_environments,
    environment_factories,
    make_dataset,
    taskgym_metrics,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="Qwen/Qwen3-0.6B",
                        help="a model whose chat template TRL knows (Qwen, Llama 3.1, ...)")
    parser.add_argument("--envs", nargs="+", default=["coding-terminal-v0", "finance-pdf-v0"])
    parser.add_argument("--tasks", default=None,
                        help="the envs' task set (e.g. 'generated'); default: curated")
    parser.add_argument("--max-steps", type=int, default=50)
    parser.add_argument("--output-dir", default="trl-taskgym")
    args = parser.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

    make_kwargs = {} if args.tasks is None else {"tasks": args.tasks}
    factories = environment_factories({env_id.split("-")[0]: env_id for env_id in args.envs},
                                      **make_kwargs)
    trainer = GRPOTrainer(
        model=args.model,
        args=GRPOConfig(output_dir=args.output_dir, max_steps=args.max_steps,
                        per_device_train_batch_size=4, num_generations=4,
                        max_completion_length=2048, max_tool_calling_iterations=16,
                        logging_steps=1, log_completions=True),
        train_dataset=make_dataset(factories),
        reward_funcs=[taskgym_metrics],  # scores nothing; logs taskgym/<component>
        environment_factory=factories,
    )
    try:
        trainer.train()
    finally:
        print(f"stopped {close_environments(trainer)} sandboxes")


if __name__ == "__main__":
    main()
