"""Reset groups for ``gym:<id>`` envs: the k-th episode of a group's copies reset alike.

gymnasium's vector envs autoreset a finished copy with an unseeded ``reset()``, so each copy
goes on with its own random stream. With ``reset_group_size=K`` every copy is wrapped in
:class:`SeededAutoreset`, which seeds each of its resets itself: a full reset hands copy
``i`` its group's seed (the same for the copies ``i`` with equal ``i // K``), and the
wrapper resets episode ``k`` with a seed derived from (group seed, k). A gymnasium env's
start state (and its random stream through the episode) is a function of its reset seed,
so the k-th episodes of a group start alike. The wrapper runs where the copy runs, in this
process or in a subprocess (``vector_mode="async"``).

Imported only when such an env is built: it needs gymnasium.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch


def derive_seed(*words: int) -> int:
    """A seed in ``[0, 2**63)`` hashed from non-negative ints (numpy's ``SeedSequence``):
    different words give independent seeds, and it fits an int64 tensor."""
    state = np.random.SeedSequence(list(words)).generate_state(1, np.uint64)[0]
    return int(state >> np.uint64(1))


class SeededAutoreset(gymnasium.Wrapper):
    """Seeds every reset of one copy from its group's seed and its episode index.

    ``reset(seed=s)`` (a full reset) makes ``s`` the group seed and starts episode 0; an
    unseeded ``reset()`` (gymnasium's autoreset) starts the next episode. Episode ``k`` is
    reset with ``derive_seed(s, k)``.

    Attributes:
        reset_group_seed: The group seed of the last full reset; None before the first.
        reset_episode: Episodes since the last full reset (0 during the first one).
    """

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        self.reset_group_seed: int | None = None
        self.reset_episode = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        if seed is not None:
            self.reset_group_seed, self.reset_episode = seed, 0
        elif self.reset_group_seed is None:  # never seeded: nothing to derive from
            return self.env.reset(options=options)
        else:
            self.reset_episode += 1
        episode_seed = derive_seed(self.reset_group_seed, self.reset_episode)
        return self.env.reset(seed=episode_seed, options=options)


class GymResetGroups:
    """What a ``GymVectorEnv`` with reset groups does beyond a plain one.

    Attributes:
        wrappers: For ``gymnasium.make_vec``: wraps each copy in :class:`SeededAutoreset`.
    """

    wrappers = (SeededAutoreset,)

    def __init__(self, num_envs: int, group_size: int) -> None:
        self.num_envs = num_envs
        self.group_size = group_size

    def seeds(self, generator: torch.Generator, seed: int | None) -> list[int]:
        """Each copy's seed for a full reset: its group's, from a key drawn from
        ``generator`` (the env's), which ``seed`` reseeds first when given; so the run is
        a function of the env's seed, and a reset without one starts new groups."""
        if seed is not None:
            generator.manual_seed(seed)
        key = int(torch.randint(0, 2**62, (), generator=generator, device=generator.device))
        groups = [derive_seed(key, g) for g in range(self.num_envs // self.group_size)]
        return [groups[i // self.group_size] for i in range(self.num_envs)]

    def state_dict(self, vector_env: Any) -> dict[str, Any]:
        """Each copy's group seed (-1 before the first reset) and episode index."""
        seeds = [-1 if s is None else s for s in vector_env.get_attr("reset_group_seed")]
        return {
            "group_size": self.group_size,
            "group_seed": torch.tensor(seeds, dtype=torch.int64),
            "episode": torch.tensor(vector_env.get_attr("reset_episode"), dtype=torch.int64),
        }

    def load_state_dict(self, vector_env: Any, state: dict[str, Any]) -> None:
        """Restores the copies' group seeds and episode indices, so that their next
        episodes start as they would have in the saved run (their current state cannot be
        restored).

        Raises:
            ValueError: ``state`` comes from an env with another reset group size.
        """
        saved = state.get("group_size", 1)
        if saved != self.group_size:
            raise ValueError(
                f"state saved with reset_group_size={saved}, this env has {self.group_size}; "
                "resume with the env.reset_group_size that saved it"
            )
        seeds = [None if s < 0 else s for s in state["group_seed"].tolist()]
        vector_env.set_attr("reset_group_seed", seeds)
        vector_env.set_attr("reset_episode", state["episode"].tolist())
