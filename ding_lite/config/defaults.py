"""Default values of every config key, each with the effect it has.

A bundled experiment or a user's config only names the keys it changes; ``compile_config``
merges them onto these defaults and rejects keys that are not here. A key whose default is
``None`` accepts the types listed in ``NULLABLE_TYPES``.
"""

from __future__ import annotations

from typing import Any

from .policy_defaults import POLICY_DEFAULTS

DEFAULT_CONFIG: dict[str, Any] = dict(
    # Name of the run; the experiment dir defaults to ./<exp_name>.
    exp_name="default_experiment",
    # Seed of torch, numpy, python and the env generators.
    seed=0,
    # "cpu", "cuda", "cuda:N" or "auto" (cuda when available).
    device="cpu",
    # Where everything of the run goes; None picks ./<exp_name> (or ./<exp_name>_N if taken).
    exp_dir=None,
    # Stop after this many env steps (None: no limit).
    max_env_step=None,
    # Stop after this many iterations (None: no limit).
    max_train_iter=None,
    env=dict(
        # "cartpole", "pendulum", "gym:<id>" (any gymnasium env) or another registered env.
        name="cartpole",
        # Env copies stepped together as one batch.
        num_envs=8,
        # Extra keyword arguments of the env's constructor.
        kwargs={},
        # How a gym:<id> env steps its copies: "sync" (one after the other in this process)
        # or "async" (each in its own subprocess, gymnasium's AsyncVectorEnv). Bundled envs
        # step all copies as one tensor batch and take only "sync".
        vector_mode="sync",
        # Copies i with equal i // reset_group_size form a reset group: the k-th episode of
        # every copy of a group starts from the same state (for grpo and rloo). 1: off. It
        # must divide num_envs, and num_envs / collector.async_factor.
        reset_group_size=1,
        # Modules imported before the env is built, e.g. ["my_envs"]: a module of the user's
        # that registers gymnasium ids or ding_lite envs. Only the user's own command line
        # or config makes a process import them; a run dir's config.json or a start task
        # only names them (docs: gymnasium.rst, "Your own gymnasium.Env").
        import_modules=[],
        # A registered reward function the collectors train on in place of the env's reward
        # ("clip", "scale" or your own; "": the env's) and its keyword arguments.
        reward_fn="",
        reward_fn_kwargs={},
    ),
    policy=POLICY_DEFAULTS,
    learner=dict(
        # Iterations BaseLearner.start() runs (parallel pipeline).
        max_iterations=1_000_000_000,
        # Checkpoints kept in <exp_dir>/ckpt (older ones are deleted).
        keep_ckpts=3,
        # DI-engine's key: this learner is one rank of a torch.distributed group (joined from
        # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT if not joined yet). The parallel
        # pipeline sets it for --learners N and torchrun.
        use_distributed=False,
        # A checkpoint (file or folder) to load before the run: DI-engine's name for the
        # load_ckpt_before_run hook shorthand ("": none).
        load_path="",
        # Hooks: shorthands "<hook>_<position>: value" (a false value disables the hook) or
        # full forms {name, type, position, priority, ext_args}.
        hook=dict(
            load_ckpt_before_run="",
            save_ckpt_after_iter=0,
            save_ckpt_after_run=True,
            log_show_after_iter=10,
            log_reduce_after_iter=True,
        ),
    ),
    collector=dict(
        # Finished training episodes kept for the running return/length statistics.
        stats_window=100,
        # Double-buffered collection: the env copies are split into this many groups of
        # env.num_envs / async_factor copies (it must divide env.num_envs); each env step
        # acts for one group and starts its step, then the next, then waits for all, so a
        # gym:<id> env with vector_mode "async" steps while the policy acts (1: off).
        async_factor=1,
    ),
    system=dict(
        # Address the coordinator binds (use 0.0.0.0 only on a trusted network).
        host="127.0.0.1",
        # Coordinator port; "auto" picks a free one.
        coordinator_port="auto",
        # How rollouts and policies travel between the learner and the collectors: "files"
        # (through path_data and path_policy, a folder every host mounts) or "http" (over
        # the service's own authenticated connections; each host keeps its own folders).
        data_plane="files",
        # Rollout files ("": <exp_dir>/data); shared by every host on the files plane.
        path_data="",
        # Published policies ("": <exp_dir>/policy); shared by every host on the files plane.
        path_policy="",
        # Shared secret of every request (None: $DING_LITE_TOKEN; the launcher makes one).
        token=None,
        # Learner and collector processes the launcher starts. Learners > 1: the ranks of one
        # data-parallel learner (torch.distributed; policy.learn.batch_size must divide by it).
        learners=1,
        collectors=2,
        # Seconds between a worker's heartbeats, and of silence before it is dropped.
        heartbeat_period=1.0,
        heartbeat_tolerance=10.0,
        # Seconds a worker rides through without an answer from the coordinator (it keeps
        # collecting or holds its learner state, and rejoins a restarted coordinator); then
        # it exits.
        master_timeout=60.0,
        # Seconds a task may take before it counts as failed.
        task_timeout=120.0,
        # Seconds one HTTP call may take.
        http_timeout=10.0,
        # Largest request body servers accept, in bytes.
        max_body_bytes=1_048_576,
        # Largest rollout file a learner accepts on the http data plane, in bytes.
        max_rollout_bytes=268_435_456,
        # Rollouts collected by a policy this many versions older than the learner's are
        # dropped (counted).
        max_policy_lag=4,
        # A collector pauses while this many of its rollout files wait to be consumed.
        max_pending_files=1,
        # Synchronous collection: each collector rolls out only with the newest policy (it
        # waits for the version the learner publishes next), so nothing lags and nothing is
        # dropped; with one collector the run computes what a serial run computes.
        sync_collect=False,
        # Published policy versions kept in path_policy.
        keep_policies=3,
        # Seconds without a completed iteration after which the run stops as "stalled"
        # (at least 20x the slowest iteration so far).
        stall_timeout=300.0,
        # Worker restarts the launcher makes in one run (a lost or dead worker is replaced).
        max_restarts=3,
        # Seconds the coordinator waits for a learner (and the first collector) to register.
        join_timeout=120.0,
        # Seconds a learner rank waits for the others (a collective, a command) before its
        # group counts as lost and is restarted.
        dist_timeout=60.0,
        # What starts the workers: "local" (child processes of this machine) or "ray" (Ray
        # actors; pip install ray, or in a ding_lite checkout pip install -e '.[ray]').
        launcher="local",
        # The Ray cluster to join ("": start a local Ray instance for the run).
        ray_address="",
        # Join a Ray cluster that serves clients without a token (default: refuse to).
        ray_allow_unauthenticated=False,
        # Ray resources of each learner rank and of each collector (CPU, GPU, or custom).
        learner_resources=dict(CPU=1.0, GPU=0.0),
        collector_resources=dict(CPU=0.5, GPU=0.0),
        # Pin a role to the Ray nodes started with this custom resource (e.g. "learner_node"
        # for `ray start --resources '{"learner_node": 1}'`; each worker asks for 0.001 of
        # it). "": any node (spread over a cluster's nodes).
        learner_node="",
        collector_node="",
        # Torch's threads per process: a number, or "auto": 1 for serial, eval and render; 1
        # per collector and the cores left to the learner; an OMP_NUM_THREADS you set stands.
        torch_threads="auto",
    ),
    evaluator=dict(
        # Evaluate every this many iterations (0: never during training; once at the end).
        eval_freq=5,
        # Deterministic episodes per evaluation (one per eval env copy).
        n_episodes=20,
        # Mean eval return at which the run counts as solved and stops (None: never).
        stop_value=None,
        # Evaluate only once the mean return of the last 20 training episodes reaches this
        # (saves time early in training; None: evaluate whenever due).
        min_train_return=None,
        # Evaluate the initial policy once before the first update (verl's
        # val_before_train): logged as iteration 0, tensorboard at env step 0, and
        # result.json's eval_before_train. It never ends the run, even if it would solve it.
        before_train=False,
        # Constructor arguments of the evaluation env over env.kwargs (e.g. a self-play run
        # evaluated against a scripted opponent: {"opponent": "rule_based"}).
        env_kwargs={},
        # Record env copy 0's episode of every this many evaluations as a video in
        # <exp_dir>/videos (pip install 'ding-lite[video]'; 0: never).
        video_freq=0,
    ),
    league=dict(
        # Train in a league (docs/league.rst): the env must have two agents a copy (one
        # policy for either side) and an outcome per episode. Agent 0 is the player that
        # learns; agent 1 an opponent from the league: its current self, a frozen snapshot
        # of the pool in <exp_dir>/league, or (for exploiters) the current main player.
        enabled=False,
        # The main player's matches: self-play, PFSP over the pool, and uniform checks of
        # the pool (AlphaStar's split; a kind set to 0 never comes).
        shares=dict(self=0.35, pfsp=0.5, check=0.15),
        # Play the self-play share on fixed copies (that share of env.num_envs) where the
        # main policy flies both sides and learns from both, as plain self-play does; the
        # other copies draw PFSP and checks only (serial pipeline, collector.async_factor=1).
        mirror=False,
        # PFSP's weight of a member the player wins x against: squared (1-x)^2, variance
        # x(1-x), linear 1-x, even (plain fictitious self-play).
        weighting="squared",
        # A snapshot of the main player joins the pool every this many iterations ...
        snapshot_every=10,
        # ... or as soon as it scores this much against every member (None: schedule only).
        admit_score=None,
        # Opponents are drawn from the newest this many members; older ones retire (they
        # stay in the table and their files in the run dir). 0: every member plays.
        pool_limit=0,
        # PFSP's weight of the k-th member to join (k = 1, 2, ...) is also multiplied by
        # k**recency: 1 weighs the pool as linear averaging does, the newest the most,
        # without retiring anyone (0: by win rate alone).
        recency=0.0,
        # Exploiters, each a policy of its own trained in turn with the main player: main
        # exploiters meet only the current main player, league exploiters the pool (PFSP).
        main_exploiters=0,
        league_exploiters=0,
        # An exploiter joins the pool and starts over from its first weights once it scores
        # this much over its recent matches, or after this many iterations.
        exploiter_reset_score=0.7,
        exploiter_max_iters=50,
        # What an exploiter starts (and starts over) from: its own first weights ("first"),
        # or the main player's weights of the moment ("main": it fine-tunes against the
        # main player's weaknesses from where the main player stands).
        exploiter_start="first",
        # Keyword arguments of the exploiters' envs over env.kwargs (their rewards only: an
        # exploiter learns from its own side), e.g. a reward that pays for another style.
        exploiter_env_kwargs={},
        # Recent matches a player's score is judged over; Elo's K factor of the table.
        window=200,
        elo_k=16.0,
    ),
    logger=dict(
        # Mirror the run to Weights & Biases (pip install 'ding-lite[wandb]'): every
        # tensorboard scalar, the config, and result.json's figures as the run's summary.
        wandb=False,
        # The W&B project, entity (team or user; None: your default entity) and group
        # (None: none; give the seeds of one experiment one group).
        wandb_project="ding_lite",
        wandb_entity=None,
        wandb_group=None,
    ),
)

# Types accepted for keys whose default is None (dotted key -> tuple of types).
NULLABLE_TYPES: dict[str, tuple[type, ...]] = {
    "exp_dir": (str,),
    "max_env_step": (int,),
    "max_train_iter": (int,),
    "policy.learn.grad_clip_norm": (float, int),
    "policy.learn.value_clip_range": (float, int),
    "policy.learn.target_kl": (float, int),
    "policy.learn.critic.learning_rate": (float, int),
    "evaluator.stop_value": (float, int),
    "evaluator.min_train_return": (float, int),
    "system.token": (str,),
    "logger.wandb_entity": (str,),
    "logger.wandb_group": (str,),
    "league.admit_score": (float, int),
}

# Keys that take more than one type (dotted key -> tuple of types).
MULTI_TYPE_KEYS: dict[str, tuple[type, ...]] = {
    "system.coordinator_port": (str, int),
    "system.torch_threads": (str, int),
}

# Sections whose keys are free-form (not checked against defaults).
FREE_FORM_KEYS = (
    "env.kwargs",
    "evaluator.env_kwargs",
    "env.reward_fn_kwargs",
    "league.exploiter_env_kwargs",
)
