"""Overrides that make a CartPole run take well under a second an iteration, with an
evaluation after every iteration and no target: for tests that need a real run's files."""

TINY_CARTPOLE = [
    "env.num_envs=4",
    "policy.collect.n_steps=16",
    "policy.learn.batch_size=32",
    "policy.learn.n_epochs=1",
    "evaluator.n_episodes=2",
    "evaluator.eval_freq=1",
    "evaluator.stop_value=none",
    "evaluator.min_train_return=none",
]
