"""What a run reports: its progress bar, its curves (``ding-lite plot``), a parallel run's
status lines and figures, and the wandb mirror of its tensorboard events."""
