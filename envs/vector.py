"""B underwater worlds stepped together in one process: a Gymnasium ``VectorEnv``.

Each world is an :class:`~embodmem.envs.underwater.UnderwaterEnv` with its own random generator,
so its robot, fish, noise and resets are exactly what it would do alone; only the expensive, shared
arithmetic is batched: one ray cast and one colour lookup render every camera
(:meth:`~embodmem.envs.camera.Camera.render_batch`), one cast scans every sonar, one call moves every
world's fish (:func:`~embodmem.envs.fauna.drift`). Every sub-env's observations, rewards, ends and
infos are bit-identical to the single env's for the same seeds and actions (tests/envs/test_vector.py
checks it against Gymnasium's ``SyncVectorEnv``), and to the single env run alone.

Autoreset follows Gymnasium's modes (``metadata["autoreset_mode"]``, default ``NEXT_STEP``, as
``SyncVectorEnv`` and CleanRL expect): an episode that ends is reset on the next ``step``, whose
action for it is ignored. ``SAME_STEP`` resets at once and puts the last observation and info in
``infos["final_obs"]`` / ``infos["final_info"]``; ``DISABLED`` leaves resets to the caller
(``reset(options={"reset_mask": ...})``, or :meth:`reset_one` with per-world options). An error in a
sub-env is re-raised as :class:`SubEnvError` naming its index and world seed.

    >>> import gymnasium as gym, embodmem
    >>> envs = gym.make_vec("EmbodMem/Wreck-v0", num_envs=4, vectorization_mode="vector_entry_point",
    ...                     image_size=16, mission_encoding="index")
    >>> obs, infos = envs.reset(seed=0)
    >>> obs["image"].shape, obs["sonar"].shape, obs["pose"].shape, obs["mission"].tolist()
    ((4, 16, 16, 3), (4, 24), (4, 3), [3, 3, 3, 3])
    >>> obs, rewards, terminated, truncated, infos = envs.step([2, 2, 0, 1])
    >>> infos["world_seed"].tolist()
    [0, 0, 0, 0]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from embodmem.envs.camera import BatchVisibility
from embodmem.envs.config import EXTRA_VIEWS
from embodmem.envs.entry import MISSION_ENCODINGS
from embodmem.envs.fauna import drift
from embodmem.envs.ground_truth import StepInfo
from embodmem.envs.spec import ACTION_NAMES, Observation
from embodmem.envs.tasks import MISSIONS
from embodmem.envs.underwater import (
    UnderwaterEnv,
    VisibleTargets,
    layered_columns,
    shows_target_kind,
    visible_targets_of,
)
from embodmem.envs.wrappers import MISSION_INDEX

ObservationBatch = dict[str, np.ndarray | tuple[object, ...]]
"""Gymnasium's batched observation: per key of the single observation, an array with a row per
sub-env, or (text missions) a tuple with an entry per sub-env."""

_Filling = dict[str, np.ndarray | list[object]]
"""An :data:`ObservationBatch` being filled (text missions a list until it is returned)."""

VectorInfos = dict[str, np.ndarray]
"""Gymnasium's batched ``info``: per key an array with a row per sub-env, and a ``_key`` mask."""

Options = Mapping[str, object]
"""``reset`` options (those of :meth:`UnderwaterEnv.reset`, plus ``reset_mask`` for the batch)."""


class SubEnvError(RuntimeError):
    """An error inside one sub-env of :class:`UnderwaterVectorEnv`: says which one and which world."""

    def __init__(self, index: int, world_seed: int, error: BaseException):
        super().__init__(f"sub-env {index} (world_seed={world_seed}): {type(error).__name__}: {error}")
        self.index = index
        self.world_seed = world_seed


class UnderwaterVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` underwater worlds (all of ``world_seed``, as ``make_vec``'s other modes make them,
    or one per entry of ``world_seeds``), each configured as :class:`UnderwaterEnv` (``task``/``tasks``, ``config`` and
    any ``EnvConfig`` field), stepped together. ``mission_encoding`` as for the registered ids
    (:mod:`embodmem.envs.entry`): ``"text"`` (a tuple of strings), ``"index"`` or ``"none"``."""

    metadata: dict[str, object] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["rgb_array"]}

    def __init__(
        self,
        num_envs: int = 1,
        world_seed: int = 0,
        world_seeds: Sequence[int] | None = None,
        mission_encoding: str = "text",
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        **env_kwargs: Any,
    ):
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs={num_envs!r} is not allowed; allowed: an integer >= 1")
        if world_seeds is None:
            world_seeds = [int(world_seed)] * num_envs
        elif len(world_seeds) != num_envs:
            raise ValueError(
                f"world_seeds={list(world_seeds)!r} is not allowed; allowed: {num_envs} seeds, one per sub-env"
            )
        if mission_encoding not in MISSION_ENCODINGS:
            raise ValueError(
                f"mission_encoding={mission_encoding!r} is not allowed; allowed: {', '.join(MISSION_ENCODINGS)}"
            )
        allowed_modes = [m.value for m in AutoresetMode]
        if not isinstance(autoreset_mode, AutoresetMode) and autoreset_mode not in allowed_modes:
            raise ValueError(f"autoreset_mode={autoreset_mode!r} is not allowed; allowed: {', '.join(allowed_modes)}")
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        self.mission_encoding = mission_encoding
        self.envs: list[UnderwaterEnv] = []
        for i, seed in enumerate(world_seeds):
            with _naming(i, int(seed)):
                self.envs.append(UnderwaterEnv(world_seed=int(seed), **env_kwargs))
        self.num_envs = len(self.envs)
        first = self.envs[0]
        self.render_mode = first.render_mode
        self.camera = first.camera
        self.sonar = first.sonar
        self.single_action_space = first.action_space
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        obs_spaces = dict(first.observation_space.__dict__["spaces"])
        if mission_encoding == "index":
            obs_spaces["mission"] = spaces.Discrete(len(MISSIONS))
        elif mission_encoding == "none":
            del obs_spaces["mission"]
        self._spaces = obs_spaces
        self.single_observation_space = spaces.Dict(obs_spaces)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._last: ObservationBatch | None = None
        self._maps_of: list[int] = []
        self._padded = np.zeros(0, np.uint8)
        self._kinds = np.zeros(0, np.uint8)

    # ------------------------------------------------------------------ Gymnasium API

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: Options | None = None
    ) -> tuple[ObservationBatch, VectorInfos]:
        """Reset every sub-env (or those in ``options["reset_mask"]``), as ``SyncVectorEnv`` does:
        ``seed`` an int (sub-env i gets ``seed + i``), a list, or None; the other ``options`` go to each
        sub-env (``UnderwaterEnv.reset``)."""
        seeds = self._seeds(seed)
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is None:
            mask = np.ones(self.num_envs, dtype=bool)
        elif not (isinstance(mask, np.ndarray) and mask.dtype == np.bool_ and mask.shape == (self.num_envs,)):
            raise ValueError(
                f"options['reset_mask']={mask!r} is not allowed; allowed: a bool array of shape ({self.num_envs},)"
            )
        obs = self._empty_obs() if mask.all() or self._last is None else self._copy(self._last)
        done = [(i, *self._reset_env(i, seeds[i], options or None)) for i in np.flatnonzero(mask).tolist()]
        for i, sub_obs, _ in done:
            self._put(obs, i, sub_obs)
        self._autoreset[mask] = False
        return self._finish(obs), self._batch_infos([(i, info) for i, _, info in done])

    def reset_one(
        self, index: int, seed: int | None = None, options: Options | None = None
    ) -> tuple[Observation, StepInfo]:
        """Reset sub-env ``index`` alone with its own ``options`` (a new world, task, start...) and
        return its observation and info; its next ``step`` steps it. For a caller that drives
        resets itself (``autoreset_mode="Disabled"``), e.g. a runner."""
        obs, info = self._reset_env(index, seed, options)
        self._autoreset[index] = False
        return obs, info

    def step(self, actions: object) -> tuple[ObservationBatch, np.ndarray, np.ndarray, np.ndarray, VectorInfos]:
        """Step every sub-env with its action (a sub-env that ended last step is reset instead, in
        ``NEXT_STEP`` mode). The actions are checked before any sub-env moves."""
        actions = self._check_actions(actions)
        n = self.num_envs
        rewards = np.zeros(n, dtype=np.float64)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        successes = np.zeros(n, dtype=bool)
        obs = self._empty_obs()
        resetting = self._autoreset if self.autoreset_mode == AutoresetMode.NEXT_STEP else np.zeros(n, dtype=bool)
        resets = [(i, *self._reset_env(i, None, None)) for i in np.flatnonzero(resetting).tolist()]
        stepped = np.flatnonzero(~resetting).tolist()
        infos_at: list[tuple[int, Mapping[str, object]]] = []
        if stepped:
            ends, draws = act_together([self.envs[i] for i in stepped], [int(actions[i]) for i in stepped], stepped)
            terminated[stepped], truncated[stepped], successes[stepped] = np.array(ends, dtype=bool).T
            infos_at = self._observe(stepped, draws, successes, obs)
        rewards[stepped] = successes[stepped].astype(np.float64)
        for i, sub_obs, info in resets:
            self._put(obs, i, sub_obs)
            infos_at.append((i, info))
        infos_at.sort(key=lambda pair: pair[0])
        ended = terminated | truncated
        if self.autoreset_mode == AutoresetMode.SAME_STEP and ended.any():
            infos = self._same_step_resets(obs, ended, infos_at)
            return self._finish(obs), rewards, terminated, truncated, infos
        self._autoreset = ended
        return self._finish(obs), rewards, terminated, truncated, self._batch_infos(infos_at)

    def render(self) -> tuple[Any, ...] | None:
        """Each sub-env's ``render()`` (``rgb_array``: camera beside the top-down map)."""
        if self.render_mode is None:
            return None
        return tuple(env.render() for env in self.envs)

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()

    # ------------------------------------------------------------------ batched observation

    def _observe(
        self, stepped: list[int], draws: np.ndarray, successes: np.ndarray, obs: _Filling
    ) -> list[tuple[int, Mapping[str, object]]]:
        """Move the fish of the stepped sub-envs, render and scan them in one batch
        (:func:`observe_together`), and fill their rows of ``obs``; returns their infos."""
        every = len(stepped) == self.num_envs
        self._refresh_maps()
        rows = slice(None) if every else np.array(stepped)
        views_wanted = tuple(view for view in EXTRA_VIEWS if view in obs)
        batch = observe_together(
            [self.envs[i] for i in stepped],
            draws,
            successes[stepped],
            stepped,
            self._padded if every else self._padded[rows],
            self._kinds[rows],
            views_wanted,
        )
        if every:
            obs["image"] = batch.images
            obs.update(batch.views)
        else:
            obs["image"][rows] = batch.images
            for view, frames in batch.views.items():
                obs[view][rows] = frames
        for i, sub_obs in zip(stepped, batch.observations):
            for key, value in sub_obs.items():
                if key == "mission":
                    obs[key][i] = self._mission(i, sub_obs["mission"])
                elif key != "image" and key not in batch.views:
                    obs[key][i] = value
        return list(zip(stepped, batch.infos))

    def _mission(self, i: int, mission: str) -> str | int:
        if self.mission_encoding == "text":
            return mission
        index = MISSION_INDEX.get(mission)
        if index is None:
            raise ValueError(f"mission_encoding='index': mission {mission!r} is not one of {list(MISSIONS)}")
        return index

    def _finish(self, obs: _Filling) -> ObservationBatch:
        """Text missions as Gymnasium batches a custom space: a tuple. Keeps the batch: a reset of
        some sub-envs returns the others' latest observations, as ``SyncVectorEnv`` does."""
        batch: ObservationBatch = {
            key: tuple(value) if isinstance(value, list) else value for key, value in obs.items()
        }
        self._last = batch
        return batch

    @staticmethod
    def _copy(obs: ObservationBatch) -> _Filling:
        """A batch to fill from an earlier one (text missions as a list again)."""
        return {key: np.copy(value) if isinstance(value, np.ndarray) else list(value) for key, value in obs.items()}

    def _put(self, obs: _Filling, i: int, sub_obs: Observation) -> None:
        """Copy one sub-env's own observation (from its reset) into row ``i``."""
        for key, value in sub_obs.items():
            if key == "mission":
                if "mission" in obs:
                    obs["mission"][i] = self._mission(i, sub_obs["mission"])
            else:
                obs[key][i] = value

    def _empty_obs(self) -> _Filling:
        """One batch of observations to fill; a text ``mission`` is a list until :meth:`_finish`."""
        obs: _Filling = {}
        for key, space in self._spaces.items():
            if key == "mission" and self.mission_encoding == "text":
                obs[key] = [None] * self.num_envs  # a tuple once filled (_finish)
            else:
                assert space.shape is not None and space.dtype is not None
                obs[key] = np.zeros((self.num_envs, *space.shape), dtype=space.dtype)
        return obs

    # ------------------------------------------------------------------ helpers

    def _reset_env(self, i: int, seed: int | None, options: Options | None) -> tuple[Observation, StepInfo]:
        env = self.envs[i]
        with _naming(i, env.world_seed):
            obs, info = env.reset(seed=seed, options=options)
            if "mission" in obs:
                self._mission(i, obs["mission"])
        return obs, info

    def _same_step_resets(
        self, obs: _Filling, ended: np.ndarray, infos_at: list[tuple[int, Mapping[str, object]]]
    ) -> VectorInfos:
        """``SAME_STEP``: reset the ended sub-envs now; their last observation and info go to
        ``final_obs`` / ``final_info`` (as ``SyncVectorEnv`` lays them out)."""
        merged: list[tuple[int, Mapping[str, object]]] = []
        for i, info in infos_at:
            if not ended[i]:
                merged.append((i, info))
                continue
            final_obs = {
                key: np.copy(value[i]) if isinstance(value, np.ndarray) else value[i] for key, value in obs.items()
            }
            sub_obs, reset_info = self._reset_env(i, None, None)
            self._put(obs, i, sub_obs)
            merged.append((i, {"final_obs": final_obs, "final_info": info, **reset_info}))
        self._autoreset[:] = False
        return self._batch_infos(merged)

    def _batch_infos(self, infos_at: list[tuple[int, Mapping[str, object]]]) -> VectorInfos:
        """Gymnasium's vector info layout (``VectorEnv._add_info``: an array per key and a ``_key``
        mask) for (index, info) pairs, built a key at a time when every info has the same flat keys."""
        if not infos_at:
            return {}
        keys = list(infos_at[0][1])
        flat = all(list(info) == keys for _, info in infos_at) and not any(
            isinstance(value, dict) for value in infos_at[0][1].values()
        )
        if not flat:
            infos: VectorInfos = {}
            for i, info in infos_at:
                infos = self._add_info(infos, dict(info), i)
            return infos
        rows = np.array([i for i, _ in infos_at])
        mask = np.zeros(self.num_envs, dtype=np.bool_)
        mask[rows] = True
        batched: VectorInfos = {}
        for key in keys:
            values = [info[key] for _, info in infos_at]
            first = values[0]
            if type(first) in (int, float, bool) or issubclass(type(first), np.number):
                array = np.zeros(self.num_envs, dtype=type(first))
                array[rows] = values
            elif isinstance(first, np.ndarray):
                array = np.zeros((self.num_envs, *first.shape), dtype=first.dtype)
                array[rows] = values
            else:
                array = np.full(self.num_envs, fill_value=None, dtype=object)
                for i, value in zip(rows.tolist(), values):
                    array[i] = value
            batched[key] = array
            batched[f"_{key}"] = mask.copy()
        return batched

    def _check_actions(self, actions: object) -> np.ndarray:
        array = np.asarray(actions)
        if array.shape != (self.num_envs,) or not np.issubdtype(array.dtype, np.integer):
            raise ValueError(
                f"actions={actions!r} is not allowed; allowed: {self.num_envs} integer actions, one per sub-env"
            )
        bad = np.flatnonzero((array < 0) | (array >= len(ACTION_NAMES)))
        if len(bad):
            i = int(bad[0])
            raise ValueError(
                f"actions[{i}]={int(array[i])} (sub-env {i}, world_seed={self.envs[i].world_seed}) "
                f"is not allowed; allowed: {ACTION_NAMES}"
            )
        return array

    def _seeds(self, seed: int | list[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, (int, np.integer)):
            return [int(seed) + i for i in range(self.num_envs)]
        if len(seed) != self.num_envs:
            raise ValueError(
                f"seed has {len(seed)} entries; allowed: one per sub-env ({self.num_envs}), an int or None"
            )
        return list(seed)

    def _refresh_maps(self) -> None:
        """Stack the worlds' padded look maps and kind maps (again only when a world changed)."""
        ids = [id(env._padded) for env in self.envs]
        if ids != self._maps_of:
            self._padded = np.stack([env._padded for env in self.envs])
            self._kinds = np.stack([env.world.kinds for env in self.envs])
            self._maps_of = ids


@dataclass
class BatchObservation:
    """What :func:`observe_together` caught for B worlds: the frames and extra views as batches, and
    each world's own observation (its frames are rows of the batches) and info."""

    images: np.ndarray
    views: dict[str, np.ndarray]
    observations: list[Observation]
    infos: list[StepInfo]
    """Each world's info (empty when not asked for: each world then only keeps what its
    ``ground_truth`` reads)."""


def observe_together(
    envs: Sequence[UnderwaterEnv],
    draws: np.ndarray,
    successes: np.ndarray,
    indices: Sequence[int],
    padded: np.ndarray,
    kinds: np.ndarray,
    views: Sequence[str],
    infos: bool = True,
) -> BatchObservation:
    """The end of ``UnderwaterEnv.step`` for B worlds that have acted (``_act``) and drawn their fauna
    draws: move every world's fish in one call, render every camera (and the extra ``views``) in one
    ray cast, scan every sonar in one cast, then make each world's observation and info, in the
    single env's order of random draws. ``padded`` / ``kinds`` are the worlds' look and kind maps
    stacked; ``indices`` name the worlds in errors. The worlds must share one camera and sonar
    setup and their fish and particle counts (:func:`batch_key`). ``infos=False``: no info dicts
    (a caller that reads the ground truth instead saves building them)."""
    first = envs[0]
    particles = np.stack([env.particles for env in envs])  # moved in place by drift
    fish = drift(np.stack([env.fish for env in envs]), particles, kinds, draws, first.camera.size)
    x = np.array([env.agent_pos[0] for env in envs])
    y = np.array([env.agent_pos[1] for env in envs])
    heading = np.array([env.agent_dir for env in envs])
    looks = [env._look() for env in envs]
    pad = first._pad
    images, visibility = first.camera.render_batch(padded, pad, x, y, heading, looks, fish, particles)
    frames = {
        view: first.camera.render_batch(padded, pad, x, y, (heading + EXTRA_VIEWS[view]) % 4, looks, fish, particles)[0]
        for view in views
    }
    ranges = first.sonar.scan_batch(padded, pad, x, y, heading)
    visible = visible_together(envs, visibility)
    observations: list[Observation] = []
    infos_made: list[StepInfo] = []
    for k, (i, env) in enumerate(zip(indices, envs)):
        with _naming(i, env.world_seed):
            env.fish = fish[k]
            env.particles = particles[k]
            sub_obs = env._observation(
                images[k], (visibility, k), {view: f[k] for view, f in frames.items()}, ranges[k]
            )
            observations.append(sub_obs)
            if infos:
                infos_made.append(env._info(bool(successes[k]), visible[k]))
            else:
                env._note_step(bool(successes[k]), visible[k])
    return BatchObservation(images, frames, observations, infos_made)


FEW_TARGET_FRAMES = 4
"""Below this many frames that show a target kind, each world finds its visible instances alone
(``UnderwaterEnv._visible_targets``): the batch's numpy calls cost more than a few worlds' own."""


def visible_together(envs: Sequence[UnderwaterEnv], visibility: BatchVisibility) -> list[VisibleTargets | None]:
    """Each world's visible target instances and cells for its frame (its row of ``visibility``),
    found for the B frames in one batch: none for a frame that shows no target kind, and, when few
    frames show one, those few left to their worlds (None)."""
    if len(envs) < FEW_TARGET_FRAMES:
        return [None] * len(envs)
    kind, kind2 = visibility.kinds()
    rows = np.flatnonzero(shows_target_kind(kind, kind2)).tolist()
    found: list[VisibleTargets | None] = [(set(), frozenset()) for _ in envs]  # a set of its own for each world
    if len(rows) < FEW_TARGET_FRAMES:
        for k in rows:
            found[k] = None
        return found
    first = envs[0]
    kinds, xs, ys, pixels = layered_columns(visibility.of(rows), first.width, first.height)
    instances = np.stack([envs[k].world.instances[ys[i], xs[i]] for i, k in enumerate(rows)])
    for k, targets in zip(rows, visible_targets_of(kinds, xs, ys, instances, pixels, first.camera.size)):
        found[k] = targets
    return found


def act_together(
    envs: Sequence[UnderwaterEnv], actions: Sequence[int], indices: Sequence[int]
) -> tuple[list[tuple[bool, bool, bool]], np.ndarray]:
    """The start of ``UnderwaterEnv.step`` for B worlds: each acts (``_act``: terminated, truncated,
    success) and draws its fauna's random numbers, in its own order; ``indices`` name the worlds in
    errors. :func:`observe_together` is the rest of the step."""
    ends = []
    draws = []
    for i, env, action in zip(indices, envs, actions):
        with _naming(i, env.world_seed):
            ends.append(env._act(action))
            draws.append(env._fauna_draws())
    return ends, np.stack(draws)


StepResult = tuple[Observation, float, bool, bool, StepInfo | None]
"""What ``UnderwaterEnv.step`` returns: observation, reward, terminated, truncated, info (None
when :func:`step_together` was not asked for infos)."""


def batch_key(env: UnderwaterEnv) -> tuple[object, ...]:
    """Worlds with the same key can be stepped together (:func:`step_together`): one camera, one
    sonar, maps of one shape, the same extra views and as many fish and particles."""
    return (
        env.camera.size,
        env.camera.fov_deg,
        env.sonar.offsets.tobytes(),
        env.sonar.max_range,
        env._pad,
        env._padded.shape,
        env.extra_views,
        env.fish.shape,
        env.particles.shape,
    )


_STACKED: dict[tuple[int, ...], tuple[list[np.ndarray], np.ndarray, np.ndarray]] = {}
""":func:`_stacked_maps`' last stacks, by the ids of the maps they stack; each entry keeps those maps
alive, so no other array can take one of their ids while it is here."""
STACKED_KEPT = 8


def _stacked_maps(envs: Sequence[UnderwaterEnv]) -> tuple[np.ndarray, np.ndarray]:
    """The worlds' padded look maps and kind maps stacked (read-only), as :func:`step_together`'s last
    calls with the same maps stacked them: the lockstep runner steps the same worlds round after
    round, and stacking them again cost a microsecond a world a step. A world's maps are replaced,
    never written, when it changes (:meth:`UnderwaterEnv._adopt_world`), which makes a new key."""
    maps = [env._padded for env in envs] + [env.world.kinds for env in envs]
    key = tuple(map(id, maps))
    kept = _STACKED.get(key)
    if kept is None:
        padded, kinds = np.stack(maps[: len(envs)]), np.stack(maps[len(envs) :])
        padded.flags.writeable = kinds.flags.writeable = False
        if len(_STACKED) >= STACKED_KEPT:
            del _STACKED[next(iter(_STACKED))]
        kept = _STACKED[key] = (maps, padded, kinds)
    return kept[1], kept[2]


def step_together(envs: Sequence[UnderwaterEnv], actions: Sequence[int], infos: bool = True) -> list[StepResult]:
    """``env.step(action)`` for each of B worlds of one :func:`batch_key`, their fish, cameras and
    sonars in one batch (:func:`observe_together`): each world's result is bit-identical to its own
    ``step``, random draws included. Each observation owns its arrays (no row of a shared batch),
    so a caller may keep one as long as it likes. An error names the world's index and seed.
    ``infos=False``: each info is None (a caller reading ``ground_truth()`` instead, as the runner
    does, saves building dicts it would drop)."""
    ends, draws = act_together(envs, actions, range(len(envs)))
    successes = np.array([success for _, _, success in ends])
    padded, kinds = _stacked_maps(envs)
    batch = observe_together(envs, draws, successes, range(len(envs)), padded, kinds, envs[0].extra_views, infos)
    made: list[StepInfo | None] = list(batch.infos) if infos else [None] * len(envs)
    results: list[StepResult] = []
    for obs, info, (terminated, truncated, success) in zip(batch.observations, made, ends):
        for view in ("image", *batch.views):
            obs[view] = obs[view].copy()  # type: ignore[literal-required]
        results.append((obs, float(success), terminated, truncated, info))
    return results


class _naming:
    """Re-raise an error of sub-env ``index`` as :class:`SubEnvError` naming it and its world."""

    def __init__(self, index: int, world_seed: int):
        self.index = index
        self.world_seed = world_seed

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> None:
        if error is not None and isinstance(error, Exception) and not isinstance(error, SubEnvError):
            raise SubEnvError(self.index, self.world_seed, error) from error


def make_underwater_vector(num_envs: int = 1, **kwargs: Any) -> UnderwaterVectorEnv:
    """``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")`` for the registered ids."""
    return UnderwaterVectorEnv(num_envs=num_envs, **kwargs)
