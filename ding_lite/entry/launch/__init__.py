"""Launchers: how a parallel run's learner and collector workers are started and restarted.

:mod:`.local` starts them as child processes of this machine; :mod:`.ray_actors` as Ray
actors, on this machine or a Ray cluster. Both feed the same restart policy.
:mod:`.supervisor` runs the coordinator as a child process and restarts it when it dies;
:mod:`.link` is the pipe between the two.
"""
