"""Progress output: a tqdm bar on a terminal, plain periodic lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import Any

from tqdm import tqdm

# tqdm's own rate is left out (the postfix shows SPS); the time left is to the env-step cap.
BAR_FORMAT = (
    "{percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}, cap in {remaining}{postfix}]"
)
NO_CAP_FORMAT = "{n_fmt} steps [{elapsed}{postfix}]"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


class Progress:
    """Shows env steps, SPS, latest training-episode return, eval return and win rate.

    The win rate (training episodes, recent window) is shown only for envs that report
    episode outcomes.

    One speed is shown: env steps per second of this run (a resumed run's earlier steps
    left out). The time left counts to the env-step cap (``max_env_step``), not to the
    target return, and says so. Without a terminal the first line comes as soon as the
    first rollout is done, then one every ``interval`` seconds.

    Args:
        total: env steps the run may take (None: unknown).
        enabled: False prints nothing.
        interval: seconds between plain lines when stdout is not a terminal.
        start: env steps done before this run (a resumed run's).
    """

    def __init__(
        self, total: int | None, enabled: bool = True, interval: float = 5.0, start: int = 0
    ) -> None:
        self.enabled = enabled
        self.interval = interval
        self._tty = sys.stdout.isatty()
        self._bar: Any = None
        self._start = time.perf_counter()
        self._last_line: float | None = None  # no line yet: the first update prints one
        self._envstep0 = self._last_envstep = start
        if enabled and self._tty:
            self._bar = tqdm(
                total=total,
                initial=start,
                unit="step",
                unit_scale=True,
                dynamic_ncols=True,
                bar_format=BAR_FORMAT if total else NO_CAP_FORMAT,
            )

    def update(
        self,
        envstep: int,
        train_iter: int,
        train_return: float | None,
        eval_return: float | None,
        *,
        win_rate: float | None = None,
    ) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        sps = (envstep - self._envstep0) / max(now - self._start, 1e-9)
        fields = dict(sps=f"{sps:,.0f}", ret=_fmt(train_return), eval=_fmt(eval_return))
        win_text = ""
        if win_rate is not None:
            fields["win"] = f"{win_rate:.0%}"
            win_text = f"win={fields['win']} "
        if self._bar is not None:
            self._bar.update(envstep - self._last_envstep)
            self._bar.set_postfix(fields, refresh=True)
            self._last_envstep = envstep
        elif self._last_line is None or now - self._last_line >= self.interval:
            self._last_line = now
            print(
                f"envstep={envstep} iter={train_iter} SPS={fields['sps']} "
                f"episode_return={fields['ret']} eval_return={fields['eval']} {win_text}"
                f"elapsed={now - self._start:.1f}s",
                flush=True,
            )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
