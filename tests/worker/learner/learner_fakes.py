"""A stand-in policy for learner tests: one vector nudged by each batch."""

import torch


class VectorPolicy:
    """``learn_mode.forward(data)`` adds ``data`` (a tensor) to ``w``; an exception is raised."""

    def __init__(self, dim: int = 3):
        self.w = torch.zeros(dim)
        self.learn_mode = self

    def forward(self, data):
        if isinstance(data, Exception):
            raise data
        self.w += data
        return {"policy_loss": float(self.w.sum())}

    def state_dict(self):
        return {"w": self.w.clone()}

    def load_state_dict(self, state, model_only=False):
        if state["w"].shape != self.w.shape:
            raise RuntimeError("size mismatch for w")
        self.w = state["w"].clone()
