"""Workers: the learner and the collector/evaluator."""
