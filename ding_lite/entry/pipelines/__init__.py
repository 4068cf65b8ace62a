"""The pipelines: serial, parallel, and the processes a parallel run is made of (the
coordinator process and the learner and collector worker processes)."""
