"""Default values of the ``policy`` section (model, learn, collect, eval), each with its
effect; :mod:`ding_lite.config.defaults` holds them under ``DEFAULT_CONFIG["policy"]``."""

from __future__ import annotations

from typing import Any

POLICY_DEFAULTS: dict[str, Any] = dict(
    # Policy class from the policy registry.
    type="ppo",
    model=dict(
        # Widths of the hidden layers of the actor and of the critic.
        hidden_sizes=[64, 64],
        # "tanh" or "relu".
        activation="tanh",
        # One trunk for actor and critic instead of two.
        share_encoder=False,
        # Initial log standard deviation of Gaussian actions.
        log_std_init=0.0,
        # Gaussian std from a head (True) or a free parameter (False).
        state_dependent_std=False,
        # Start the value head at zero (weights and bias).
        zero_init_value=False,
        # Orthogonal initialisation of the layers.
        ortho_init=True,
        # Normalize observations by running mean and variance (statistics in the model,
        # updated from every rollout's raw observations after each update).
        obs_norm=False,
        # Normalized observations are clipped to [-obs_clip, obs_clip].
        obs_clip=10.0,
        # Memory: "none" (a feed-forward policy), "lstm" or "gru" (a recurrent core
        # between one shared encoder and the heads; its state is carried per env copy).
        core="none",
        # Hidden size of the recurrent core.
        core_size=128,
        # Build a value head (false: none is built, trained or saved; only with a
        # critic-free estimator: reinforce_pp, grpo or rloo).
        critic=True,
        # State-dependent exploration (gSDE; Box actions): an action's exploration is a
        # function of the actor's features, redrawn every sde_sample_freq env steps, so
        # it is smooth in time; the log-std is a [features, actions] matrix.
        sde=False,
        # Env steps between new exploration matrices (with sde).
        sde_sample_freq=4,
        # What reads the observation: "mlp" (flattened into hidden_sizes) or "cnn"
        # (observations of shape [C, H, W], e.g. the grid env's window: ReLU convolutions,
        # then hidden_sizes on their flattened output).
        encoder="mlp",
        # Output channels of each convolution (encoder=cnn).
        cnn_channels=[32, 32],
        # Side of each convolution's square kernel (stride 1, no padding; encoder=cnn).
        cnn_kernel=3,
    ),
    learn=dict(
        # Passes over each batch per iteration.
        n_epochs=4,
        # Minibatch size (samples per gradient step).
        batch_size=256,
        # Steps per segment: rollouts are cut into segments of this many steps of one
        # env copy, a minibatch is a set of whole segments, and a recurrent policy
        # replays each from the state stored at its start (backpropagation through
        # time). Must divide policy.collect.n_steps and policy.learn.batch_size.
        bptt_horizon=1,
        # Prioritized segments: draw each minibatch's segments with replacement, with
        # probability proportional to (sum of the segment's |advantage|) ** prio_alpha,
        # and scale their advantages by importance weights; 0 keeps the shuffled,
        # uniform minibatches.
        prio_alpha=0.0,
        # The importance weights' exponent at the start of the run; it rises by
        # (1 - prio_beta0) * prio_alpha * (fraction of the run done), at most to 1.
        prio_beta0=0.6,
        # Adam/AdamW learning rate.
        learning_rate=3e-4,
        # Anneal the learning rate linearly to 0 over max_env_step (or max_train_iter).
        lr_anneal=False,
        # "adam" or "adamw".
        optimizer="adam",
        # Weight decay of the optimizer.
        weight_decay=0.0,
        # Adam epsilon.
        adam_eps=1e-5,
        # PPO ratio clip epsilon.
        clip_ratio=0.2,
        # Policy loss from the registry (ding_lite.rl_utils.policy_loss): "ppo_clip",
        # "dual_clip" (also bounded by clip_ratio_c for negative advantages) or
        # "clip_higher" (the ratio clipped to [1 - clip_ratio_low, 1 + clip_ratio_high])
        # or "decoupled" (clipped around the learner's policy as the update starts, each
        # sample weighted by it over the behaviour policy, truncated at is_max).
        policy_loss="ppo_clip",
        # decoupled's truncation of the weight of the learner's over the behaviour policy.
        is_max=1.0,
        # dual_clip's bound: a negative advantage's loss is at most -clip_ratio_c * adv.
        clip_ratio_c=3.0,
        # clip_higher's ranges below and above 1 (None: clip_ratio).
        clip_ratio_low=None,
        clip_ratio_high=None,
        # Clip the value loss around the old values (with value_clip_range).
        value_clip=False,
        # The value's clip range with value_clip (None: clip_ratio, the ratio's range).
        value_clip_range=None,
        # Weight of the value loss.
        value_weight=0.5,
        # Weight of the entropy bonus.
        entropy_weight=0.0,
        # Anneal the entropy weight linearly to 0 over max_env_step (or max_train_iter),
        # as lr_anneal does the learning rate: a policy that explored early acts
        # almost deterministically by the end, also when its actions are sampled.
        entropy_anneal=False,
        # Advantage estimator from the registry: "gae" (normalized per minibatch),
        # "gae_no_norm", or a critic-free one over whole episodes: "reinforce_pp"
        # (returns-to-go standardized over the batch), "grpo" or "rloo" (an episode's
        # return against the others of its group; they need env.reset_group_size > 1),
        # or "vtrace" (GAE with each step weighted by the learner's policy over the
        # behaviour policy: for data a version or more old).
        adv_estimator="gae",
        # vtrace's truncations: of each TD error's importance weight, and of the traces.
        vtrace_rho_max=1.0,
        vtrace_c_max=1.0,
        # grpo divides an episode's advantage by its group's standard deviation.
        norm_by_std=True,
        # Recompute each rollout's values (and the bootstrap values after each step) with
        # the learner's critic before the advantages, instead of using the collector's
        # (older) ones; feed-forward policies only.
        recompute_values=False,
        # A KL(policy || reference) penalty subtracted from every step's reward before
        # the advantages: type "none", "fixed" (coef) or "adaptive" (coef moved toward
        # target, by at most 20% per horizon env steps); logged as charts/kl_reward_coef.
        # estimator: how each step's KL is estimated from the action's log-probs: "k1"
        # (alias "kl"), "abs", "k2" ("mse"), "k3" ("low_var_kl"), or a registered one.
        kl_in_reward=dict(type="none", coef=0.001, target=0.01, horizon=10_000, estimator="k1"),
        # Clip the global gradient norm to this (None: no clipping).
        grad_clip_norm=0.5,
        # Minibatches whose gradients are summed before one optimizer step.
        grad_accum_steps=1,
        # Consecutive optimizer steps skipped for a non-finite loss or gradient after
        # which the run stops as "diverged".
        max_skipped_steps=50,
        # How each minibatch's per-step losses (policy, entropy, value, KL) are averaged
        # (verl's loss_agg_mode): "token-mean" (every step alike), "seq-mean-token-mean",
        # "seq-mean-token-sum" or "seq-mean-token-sum-norm" (per sequence first: a BPTT
        # segment cut at episode starts, or an episode with an episode-level estimator).
        loss_agg_mode="token-mean",
        # Kickstarting: a trained teacher pulls the policy toward its actions. teacher: its
        # run dir or checkpoint file ("": off; a feed-forward policy of the same spaces);
        # each minibatch adds coef * KL(teacher || policy) and value_coef * 0.5 * (v -
        # v_teacher)^2, both falling linearly to 0 over decay_iters iterations (0: never).
        kickstart=dict(teacher="", coef=1.0, value_coef=0.0, decay_iters=0),
        # The critic's optimizer: "shared" (one optimizer and one step over every
        # parameter) or "separate" (the actor and the critic each their own Adam and
        # gradient clip; needs share_encoder=false); learning_rate: the critic's (None: the
        # actor's; annealed alike); order: "together" (each minibatch steps both) or
        # "critic_first" (verl: all the critic's epochs on the batch, then the actor's).
        critic=dict(optimizer="shared", learning_rate=None, order="together"),
        # Weight of a KL(policy || reference policy) penalty (0: off).
        kl_coef=0.0,
        # How that KL is computed: "full" (exact, between the action distributions) or
        # estimated from the minibatch's actions: "k1", "abs", "k2", "k3" (verl's kl,
        # abs, mse, low_var_kl; those names work too) or a registered estimator.
        kl_estimator="full",
        # kl_coef is multiplied by this after every iteration.
        kl_coef_decay=1.0,
        # Copy the policy into the reference every this many iterations (0: the initial
        # policy stays the reference).
        kl_ref_update_interval=0,
        # First iterations that train the value function only.
        value_warmup_iters=0,
        # Stop an iteration's epochs early when approx_kl exceeds this (None: never).
        target_kl=None,
        # Divide rewards by a running estimate of the discounted return's standard
        # deviation (per env copy, reset at episode ends), as SB3's VecNormalize does.
        reward_scale=False,
    ),
    collect=dict(
        # Env steps per copy in one rollout (a batch is n_steps * num_envs samples).
        n_steps=128,
        # Discount factor.
        gamma=0.99,
        # GAE lambda.
        gae_lambda=0.95,
    ),
    eval=dict(
        # Eval actions are the distribution's mode (True) or samples (False).
        deterministic=True,
    ),
)
