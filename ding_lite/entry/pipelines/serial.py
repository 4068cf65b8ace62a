"""The serial pipeline: collect, train and evaluate in one process."""

from __future__ import annotations

import math
import socket
import time
from collections.abc import Mapping
from typing import Any

from ding_lite.entry.live.snapshots import final_state, serial_snapshot
from ding_lite.entry.live.status_file import StatusWriter
from ding_lite.entry.pipelines.league_serial import SerialLeague
from ding_lite.entry.reporting.progress import Progress
from ding_lite.entry.run.lifecycle import RESULT_FILE, RunDir
from ding_lite.entry.run.options import RunOptions, compile_run_config, import_run_modules
from ding_lite.entry.run.result import RunFigures, build_result, summary
from ding_lite.entry.trained.predict import TrainedRun  # its package registers the "ppo" agent
from ding_lite.envs.buffered import build_collector_env
from ding_lite.envs.from_config import build_env
from ding_lite.policy import create_policy
from ding_lite.policy.build import seed_updates
from ding_lite.utils.device import resolve_device
from ding_lite.utils.errors import ConfigError, DiskFullError
from ding_lite.utils.log import build_tb_logger, close_tb_logger, get_logger, setup_file_logging
from ding_lite.utils.rng import set_seed
from ding_lite.utils.stop import (
    DISK_FULL,
    INTERRUPTED,
    RunInterrupted,
    limit_reached,
    signals_deferred,
    sigterm_interrupts,
)
from ding_lite.utils.threads import torch_threads
from ding_lite.worker.collector import EvalResult, Evaluator, SerialCollector
from ding_lite.worker.collector.eval_video import EvalVideo, log_eval_video
from ding_lite.worker.learner import BEST_CKPT, BaseLearner, BestEval
from ding_lite.worker.learner.saved_policy import attach_teacher

EVAL_SEED_OFFSET = 1_000_003


def serial_pipeline(
    cfg: str | Mapping[str, Any] | None = None, *args: Any, verbose: int = 1, **options: Any
) -> TrainedRun:
    """Trains a policy in one process and returns it, ready to predict.

    Args:
        cfg: a bundled experiment name (``"cartpole_ppo"``), a .py/.yaml config file, or a
            config dict / EasyDict (None with ``resume=``).
        verbose: 1 (default) shows progress on stdout (a bar on a terminal, a line every
            few seconds otherwise) and the closing summary; 0 prints nothing.
        **options: keyword-only, those of :class:`~ding_lite.entry.run.options.RunOptions`
            but the parallel ones: ``seed``, ``max_env_step``, ``max_train_iter``,
            ``overrides``, ``exp_dir``, ``device``, ``resume``, ``import_modules``. The
            modules the config names (``env.import_modules``, ``gym:module:Id``) are
            imported first; resuming, only those listed in ``import_modules``.

    Returns:
        A :class:`~ding_lite.entry.trained.predict.TrainedRun`: ``predict(obs)``,
        ``result`` (the figures written to result.json), ``model``, ``policy``, ``run_dir``.

    Raises:
        TypeError: a positional argument after ``cfg``, or an unknown keyword.
        ConfigError: a bad config, override or option (nothing is written).
        RunInterrupted: SIGINT or SIGTERM ended the run (result.json written first).
        DiskFullError: a write failed for lack of space.
    """
    start = time.perf_counter()
    opts = RunOptions.of_call("serial_pipeline", args, options, parallel=False)
    with sigterm_interrupts():  # SIGTERM unwinds the run like Ctrl-C, result.json and all
        run_cfg = compile_run_config(cfg, opts)
        import_run_modules(run_cfg, opts)
        # Choosing and locking the dir is one step, so two runs started at once never share it.
        with (
            RunDir.claim(run_cfg, resuming=opts.resume is not None) as run_dir,
            torch_threads(run_cfg.system.torch_threads),
        ):
            run = _build_run(run_cfg, run_dir)
            result = run.run(start, verbose)
    if verbose:
        print(summary(result), flush=True)
    return TrainedRun(run.policy, run.env.obs_shape, run.env.action_space, result)


def _build_run(cfg: Any, run_dir: RunDir) -> SerialRun:
    """Builds the run in its locked dir; a failure removes what the claim created."""
    try:
        return SerialRun(cfg, run_dir)
    except BaseException:
        run_dir.discard_if_untrained(trained=False)
        raise


class SerialRun:
    """One serial run: builds every part from a resolved config, then trains.

    Everything that can reject bad input (device, env, policy, hooks, the checkpoint to
    load) runs before the experiment dir is written; a run that fails before its first
    iteration removes what it created (:meth:`RunDir.discard_if_untrained`), so a bad call
    changes nothing.

    Args:
        cfg: the resolved config.
        run_dir: the hold on the run's claimed dir; what the run created goes if it fails
            before training (a failed resume keeps the dir: it can be resumed again).
    """

    def __init__(self, cfg: Any, run_dir: RunDir) -> None:
        self.cfg = cfg
        self.run_dir = run_dir
        set_seed(cfg.seed)
        self.device = device = resolve_device(cfg.device)
        self.env = build_collector_env(cfg, cfg.env.num_envs, device, cfg.seed)
        eval_seed = cfg.seed + EVAL_SEED_OFFSET
        self.eval_env = build_env(cfg, cfg.evaluator.n_episodes, device, eval_seed, evaluation=True)
        batch = cfg.policy.collect.n_steps * cfg.env.num_envs
        # The LR schedule spans max_env_step when set, so it does not change when a resumed
        # run is given a new max_train_iter.
        if cfg.max_env_step:
            total_iters = math.ceil(cfg.max_env_step / batch)
        else:
            total_iters = cfg.max_train_iter
        try:
            self.policy = create_policy(
                cfg.policy,
                obs_shape=self.env.obs_shape,
                action_space=self.env.action_space,
                device=device,
                total_iters=total_iters,
            )
        except KeyError as err:
            raise ConfigError(err.args[0]) from None
        seed_updates(self.policy, cfg.seed)  # as a parallel learner does: its own stream
        attach_teacher(self.policy, cfg, self.env.obs_shape, self.env.action_space)
        self.learner = BaseLearner(
            cfg.learner, self.policy, None, cfg.exp_name, exp_dir=run_dir.path
        )
        self.league: SerialLeague | None = None
        if cfg.league.enabled:  # agent 0 learns, agent 1 is the league's (docs/league.rst)
            self.league = SerialLeague(cfg, run_dir.path, policy=self.policy, env=self.env)
            self.env = self.league.seat_main(self.env)
            self.league.attach(self.learner)  # its hook runs before the checkpoint hook
        self.collector = SerialCollector.from_config(self.env, self.policy, cfg, cfg.seed)
        self.learner.register_state("collector", self.collector)
        self.best = BestEval(self.learner.ckpt_dir)
        self.learner.register_state("best_eval", self.best)
        self.evaluator = Evaluator(
            self.eval_env,
            self.policy.eval_mode,
            stop_value=cfg.evaluator.stop_value,
            seed=eval_seed,
            video=EvalVideo.from_config(cfg, run_dir.path),
        )
        self.logger = get_logger("serial")
        self.last_eval: EvalResult | None = None
        self.eval_at: tuple[int, int] = (0, 0)  # iteration and env steps of the last eval
        self.live: StatusWriter | None = None  # status.json, once the dir is prepared
        self.before_train: EvalResult | None = None  # evaluator.before_train's result
        self.solved = False
        self.stop_reason: str | None = None
        self.sps_meter: _SpsMeter | None = None  # from the first rollout of this run
        self.gradient_steps = 0  # minibatches trained on in this run (result.json)

    def _evaluate(self, tb_logger: Any) -> None:
        start = time.perf_counter()
        result = self.last_eval = self.evaluator.eval(version=self.learner.train_iter)
        self.eval_at = (self.learner.train_iter, self.collector.envstep)
        log_eval_video(tb_logger, result.video, self.collector.envstep, self.run_dir.path)
        tb_logger.add_scalar("perf/eval_s", time.perf_counter() - start, self.collector.envstep)
        self.solved = self.solved or result.solved
        if self.best.improves(result.return_mean, self.learner.train_iter):
            self.learner.save_checkpoint(BEST_CKPT.removesuffix(".pt"))
        envstep = self.collector.envstep
        tb_logger.add_scalar("charts/eval_return", result.return_mean, envstep)
        win_text = ""
        if result.win_rate is not None:
            tb_logger.add_scalar("charts/eval_win_rate", result.win_rate, envstep)
            win_text = f", win rate {result.win_rate:.1%}"
        self.logger.info(
            f"eval at iter {self.learner.train_iter} envstep {envstep}: return "
            f"{result.return_mean:.2f} +- {result.return_std:.2f} over {result.n_episodes} "
            f"episodes{win_text}"
        )

    def _eval_due(self) -> bool:
        ev_cfg = self.cfg.evaluator
        if not ev_cfg.eval_freq or self.learner.train_iter % ev_cfg.eval_freq != 0:
            return False
        if ev_cfg.min_train_return is None:
            return True
        recent = self.collector.mean_recent_return()
        return recent is not None and recent >= ev_cfg.min_train_return

    def _limit_reached(self) -> str | None:
        """Why the run should stop now (None: it should go on)."""
        cfg = self.cfg
        if self.learner.stop_reason is not None:
            return self.learner.stop_reason or "stop requested"
        return limit_reached(cfg, self.collector.envstep, self.learner.train_iter)

    def run(self, start: float, verbose: int) -> dict[str, Any]:
        """Trains until solved, a limit or a stop request; writes and returns result.json.

        Args:
            start: ``time.perf_counter()`` when the call began (for ``wall_s``).
            verbose: show progress on stdout (0: nothing).

        Raises:
            RunInterrupted: SIGINT or SIGTERM ended the run (result.json written first).
            DiskFullError: a write failed for lack of space (result.json written if it
                could be, with ``stop_reason`` "disk_full").
        """
        try:
            return self._run(start, verbose)
        except KeyboardInterrupt as err:  # Ctrl-C, or SIGTERM's RunInterrupted
            self._fail(err, start)
            name = getattr(err, "signal_name", "SIGINT")
            raise RunInterrupted(name, self.run_dir.resumable()) from None
        except BaseException as err:
            self._fail(err, start)
            raise

    def _fail(self, err: BaseException, start: float) -> None:
        """Books a run that did not end normally; the caller re-raises."""
        # One that never trained leaves nothing, so the command can simply be re-run.
        if self.run_dir.discard_if_untrained(trained=self.learner.train_iter > 0):
            return
        if isinstance(err, DiskFullError):
            self.stop_reason = DISK_FULL
        elif isinstance(err, KeyboardInterrupt):
            self.stop_reason = INTERRUPTED
        else:
            self._close_status("failed", stop_detail=f"{type(err).__name__}: {err}")
            return
        detail = str(err) if isinstance(err, DiskFullError) else ""
        self._close_status(final_state(self.stop_reason), stop_detail=detail)
        try:
            self.run_dir.write_result(self._result(start, stop_detail=detail))
        except OSError as write_err:  # DiskFullError too; the caller reports the first error
            self.logger.info(f"could not write {RESULT_FILE}: {write_err}")

    def _run(self, start: float, verbose: int) -> dict[str, Any]:
        cfg, learner, run_dir = self.cfg, self.learner, self.run_dir
        log_handler = None
        try:
            with learner.auto_checkpoint():
                learner.call_hook("before_run")
                # Only now, with every input accepted, does the run write anything.
                run_dir.prepare(cfg)
                log_handler = setup_file_logging(run_dir.path / "log.txt")
                self.live = StatusWriter(
                    run_dir.path,
                    serial_snapshot(self, socket.gethostname()),
                    pipeline="serial",
                    exp_name=cfg.exp_name,
                ).start()
                learner.tb_logger = build_tb_logger(run_dir.path / "tb")
                resumed = (
                    f", resumed at iteration {learner.train_iter}" if learner.train_iter else ""
                )
                self.logger.info(
                    f"run {cfg.exp_name}: env {cfg.env.name} x{cfg.env.num_envs} on "
                    f"{self.device}, dir {run_dir.path}{resumed}"
                )
                self._loop(verbose)
                learner.call_hook("after_run")
        finally:
            if self.live is not None:
                self.live.stop()  # the last snapshot, with the stop reason, comes below
            learner.close()
            if learner.tb_logger is not None:
                close_tb_logger(learner.tb_logger)
            if log_handler is not None:
                get_logger().removeHandler(log_handler)
                log_handler.close()
        result = self._result(start)
        run_dir.write_result(result)
        self._close_status(final_state(self.stop_reason))
        return result

    def _close_status(self, state: str, **final: Any) -> None:
        """The last status.json: the final state and stop reason (no-op before it began)."""
        if self.live is not None:
            self.live.close(state, stop_reason=self.stop_reason, **final)

    def _loop(self, verbose: int) -> None:
        learner, collector, tb_logger = self.learner, self.collector, self.learner.tb_logger
        bar = Progress(self.cfg.max_env_step, enabled=bool(verbose), start=collector.envstep)
        sps_meter = self.sps_meter = _SpsMeter(collector.envstep)
        if self.live is not None:
            self.live.state = "running"
        if self.cfg.evaluator.get("before_train") and learner.train_iter == 0:
            self._evaluate(tb_logger)
            self.before_train, self.solved = self.last_eval, False  # it never ends the run
        try:
            while True:
                if learner.train_iter > 0 and self._eval_due():
                    self._evaluate(tb_logger)
                    if self.solved:
                        self.stop_reason = "solved"
                        break
                self.stop_reason = self._limit_reached()
                if self.stop_reason:
                    break
                # An iteration is whole or not at all in a checkpoint: Ctrl-C or SIGTERM
                # stops the run after it (a second one, at once).
                with signals_deferred():
                    with learner.timer("collect"):  # tensorboard: perf/collect_s
                        data = collector.collect()
                    info = learner.train(data, collector.envstep)
                self.gradient_steps += int(info.get("minibatches", 0))
                _log_train(tb_logger, collector, sps_meter)
                self._show(bar)
            # End on a fresh evaluation unless the last one just solved the env.
            if not self.solved:
                self._evaluate(tb_logger)
                self._show(bar)  # the last frame shows the figure the summary gives
        finally:
            bar.close()

    def _show(self, bar: Progress) -> None:
        rates = self.collector.outcome_rates()
        bar.update(
            self.collector.envstep,
            self.learner.train_iter,
            self.collector.mean_recent_return(),
            self.last_eval.return_mean if self.last_eval else None,
            win_rate=None if rates is None else rates["win_rate"],
        )

    def _result(self, start: float, **extra: Any) -> dict[str, Any]:
        ev = self.last_eval  # None: none ran
        figures = RunFigures(
            solved=bool(self.solved),
            stop_reason=self.stop_reason,
            eval_return_mean=ev.return_mean if ev else None,
            eval_episodes=ev.n_episodes if ev else 0,
            train_return_mean=self.collector.mean_recent_return(),
            envstep=self.collector.envstep,
            train_iter=self.learner.train_iter,
            wall_s=time.perf_counter() - start,
            # This run's own steps over its own loop time, interrupted or not.
            sps=self.sps_meter.sps() if self.sps_meter is not None else 0.0,
            has_best_checkpoint=self.best.path.is_file(),
            best_eval_return=self.best.return_mean,
            skipped_steps=getattr(self.policy, "skipped_steps", 0),
            restarts=0,  # the serial pipeline restarts nothing
            gradient_steps=self.gradient_steps,
        )
        if ev is not None and ev.win_rate is not None:
            extra["eval_win_rate"] = ev.win_rate
        first = self.before_train  # evaluator.before_train's evaluation (None: none ran)
        extra["eval_before_train"] = (
            None
            if first is None
            else {
                "return_mean": first.return_mean,
                "win_rate": first.win_rate,
            }
        )
        return build_result(
            self.cfg, figures, eval_return_std=ev.return_std if ev else None, **extra
        )


class _SpsMeter:
    """Env steps per second since the loop started (a resumed run counts only its own)."""

    def __init__(self, envstep: int) -> None:
        self._envstep0 = envstep
        self._t0 = time.perf_counter()
        self.envstep = envstep

    def sps(self) -> float:
        return (self.envstep - self._envstep0) / max(time.perf_counter() - self._t0, 1e-9)


def _log_train(tb_logger: Any, collector: SerialCollector, sps_meter: _SpsMeter) -> None:
    step = sps_meter.envstep = collector.envstep
    if collector.last_returns:  # the mean of the rollout's episodes, as the parallel run logs
        returns = collector.last_returns
        tb_logger.add_scalar("charts/episodic_return", sum(returns) / len(returns), step)
    if collector.last_lengths:
        lengths = collector.last_lengths
        tb_logger.add_scalar("charts/episodic_length", sum(lengths) / len(lengths), step)
    rates = collector.outcome_rates()
    if rates is not None:  # over the collector's recent window, not just this rollout
        for name, rate in rates.items():
            tb_logger.add_scalar(f"charts/{name}", rate, step)
    tb_logger.add_scalar("charts/SPS", sps_meter.sps(), step)
