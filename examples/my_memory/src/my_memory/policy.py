"""A tiny scripted policy: follow the sonar (forward while the way ahead is clear, else turn).

It reads only its observations and keeps nothing between tasks, so it runs once per task
(``single``), beside the memory agents. ``make_agent`` is what the ``embodmem.agents`` entry point
names: embodmem calls it with the run's build context.

Example:
    >>> import numpy as np
    >>> agent = WallFollower()
    >>> agent.act({"sonar": np.array([0.5, 9.0, 0.5], np.float32)}), agent.act({"sonar": np.full(3, 9.0, np.float32)})
    (0, 2)
"""

from __future__ import annotations

import numpy as np

from embodmem.api import Action, Agent, BuildContext, Observation

CLEAR_M = 2.5
"""The beam straight ahead must echo farther than this to move forward."""


class WallFollower(Agent):
    name = "wall_follower"

    def act(self, observation: Observation) -> int:
        sonar = np.asarray(observation["sonar"], np.float32)
        ahead = sonar[len(sonar) // 2 - 1 : len(sonar) // 2 + 2]
        return int(Action.FORWARD if float(np.min(ahead)) > CLEAR_M else Action.TURN_LEFT)


def make_agent(ctx: BuildContext) -> Agent:
    """The factory embodmem calls (``agent=my_memory.policy:make_agent`` or ``agent=wall_follower``)."""
    return WallFollower()


make_agent.needs_embedder = False  # type: ignore[attr-defined]  # it never looks at the camera: no CLIP loaded
