"""The learner side of the parallel pipeline."""

from ding_lite.worker.learner.comm.base_comm_learner import BaseCommLearner
from ding_lite.worker.learner.comm.flask_fs_learner import FlaskFileSystemLearner

__all__ = ["BaseCommLearner", "FlaskFileSystemLearner"]
