"""Agents: the protocol, no privileged state, recognition and memory recall on real frames."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from embodmem.agents.config import MemoryAgentConfig
from embodmem.agents.explorer import FrontierExplorer
from embodmem.agents.memory_agent import MemoryAgent, RecalledPlace
from embodmem.agents.oracle import OracleAgent
from embodmem.agents.random_agent import RandomAgent
from embodmem.agents.recognizer import KindLabeller
from embodmem.embedding.embedder import ClipEmbedder
from embodmem.envs.objects import TARGET_KINDS
from embodmem.envs.spec import DIR_TO_VEC
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.memory import AgentMemory, FrameMeta, MemoryConfig, MemoryLoadError
from embodmem.runner import run_episode


@pytest.fixture(scope="module")
def embedder() -> ClipEmbedder:
    return ClipEmbedder(threads=1)


def _holds_env(obj, depth: int = 0, seen: set | None = None) -> bool:
    seen = seen if seen is not None else set()
    if id(obj) in seen or depth > 3:
        return False
    seen.add(id(obj))
    if isinstance(obj, UnderwaterEnv):
        return True
    children = list(vars(obj).values()) if hasattr(obj, "__dict__") else []
    if isinstance(obj, dict):
        children = list(obj.values())
    elif isinstance(obj, (list, tuple, set)):
        children = list(obj)
    return any(_holds_env(c, depth + 1, seen) for c in children if not isinstance(c, (np.ndarray, str, int, float)))


def test_only_the_oracle_holds_the_environment(embedder: ClipEmbedder) -> None:
    env = UnderwaterEnv(task="barrel", world_seed=1, max_steps=30)
    for agent in (RandomAgent(0), FrontierExplorer(embedder), MemoryAgent(embedder)):
        run_episode(env, agent, {"task": "barrel"}, episode_seed=0)
        assert not _holds_env(agent), agent.name
    assert _holds_env(OracleAgent(env))


def _frames_facing(env: UnderwaterEnv, kind: str, distances=(2, 3)) -> list[tuple[tuple[int, int, int], np.ndarray]]:
    out = []
    free = env.world.free()
    for cells in env.world.instance_cells(kind):
        for cx, cy in cells:
            for d, (dx, dy) in enumerate(DIR_TO_VEC):
                for dist in distances:
                    x, y = cx - dx * dist, cy - dy * dist
                    if 0 <= x < env.width and 0 <= y < env.height and free[y, x]:
                        obs, _ = env.reset(seed=0, options={"task": "wreck", "start_pose": (x, y, d)})
                        if env.visible_pixels().get(kind, 0) > 40:
                            out.append(((x, y, d), obs))
    return out


def test_recognizer_tells_the_mission_target_from_others(embedder: ClipEmbedder) -> None:
    env = UnderwaterEnv(world_seed=9001)
    agent = FrontierExplorer(embedder)
    agent.recognizer.set_mission("find oil drums")
    barrels = _frames_facing(env, "barrel")
    wrecks = _frames_facing(env, "wreck")
    assert barrels and wrecks
    p_barrel = agent.recognizer.probability(embedder.embed_images(np.stack([o["image"] for _, o in barrels])))
    p_wreck = agent.recognizer.probability(embedder.embed_images(np.stack([o["image"] for _, o in wrecks])))
    assert np.median(p_barrel) > 0.8 and np.median(p_wreck) < 0.2


def _frames_of_nothing(env: UnderwaterEnv, n: int = 40) -> list[np.ndarray]:
    """Camera images from random starts that show no target."""
    out = []
    for i in range(n):
        obs, _ = env.reset(seed=i, options={"task": "wreck", "start": "random"})
        if not set(env.visible_pixels()) & set(TARGET_KINDS):
            out.append(obs["image"])
    return out


def test_kind_labeller_names_the_target_in_view(embedder: ClipEmbedder) -> None:
    """Frames facing a target are labelled with its kind, confidently; frames showing none are not."""
    env = UnderwaterEnv(world_seed=9001)
    labeller = KindLabeller(embedder)
    for kind in ("barrel", "wreck", "wind_station", "landing_platform"):
        frames = _frames_facing(env, kind)
        kinds, p = labeller.label(embedder.embed_images(np.stack([o["image"] for _, o in frames])))
        assert frames and np.mean([k == kind for k in kinds]) > 0.9 and np.median(p) > 0.8, kind
    nothing = _frames_of_nothing(env)
    _, p = labeller.label(embedder.embed_images(np.stack(nothing)))
    assert len(nothing) >= 10 and np.mean(p >= 0.5) < 0.1


def test_memory_agent_labels_the_frames_it_writes(embedder: ClipEmbedder) -> None:
    """Every frame written carries the kind its camera image shows (none below the detect
    probability, with salience 0); implanted images are labelled the same way."""
    env = UnderwaterEnv(world_seed=9001)
    memory = AgentMemory(MemoryConfig(dim=embedder.dim, short_term_capacity=256, consolidate_to=128))
    agent = MemoryAgent(embedder, memory)
    frames = _frames_facing(env, "barrel")
    agent.reset(frames[0][1], env.sensor_spec)
    for _, obs in frames:
        agent.update(obs)
    nothing = _frames_of_nothing(env, 10)
    assert nothing
    for image in nothing:
        agent.update(frames[0][1] | {"image": image})
    metas = memory.fifo.metas
    assert len(metas) == len(frames) + len(nothing)
    assert np.mean([m.label == "barrel" for m in metas[: len(frames)]]) > 0.9
    assert all(m.label == "" for m in metas[len(frames) :])
    assert all(m.salience >= agent.config.detect_probability if m.label else m.salience == 0.0 for m in metas)
    fresh = MemoryAgent(embedder)
    fresh.implant(np.stack([o["image"] for _, o in frames[:4]]), [pose for pose, _ in frames[:4]])
    store = fresh.frame_memory.store
    assert len(store) and {store.meta.meta(r).label for r in range(len(store))} == {"barrel"}


def test_explorer_searches_again_once_everything_reachable_was_looked_at(embedder: ClipEmbedder) -> None:
    """A target missed in the fog must not end the search: coverage is forgotten, the map kept."""
    env = UnderwaterEnv(world_seed=9002)
    agent = FrontierExplorer(embedder)
    obs, _ = env.reset(seed=0, options={"task": "barrel"})
    agent.reset(obs, env.sensor_spec)
    agent.update(obs)  # the robot's pose
    agent.grid.occupied[:] = env.world.kinds > 0
    agent.grid.free[:] = env.world.kinds == 0
    agent.grid.seen[:] = True
    assert agent.frontier_action() is not None and agent.trace.mode == "frontier"
    assert not agent.grid.seen.any() and agent.grid.free.sum() == (env.world.kinds == 0).sum()


def test_memory_recall_triangulates_the_target_from_remembered_frames(embedder: ClipEmbedder) -> None:
    """Frames of the barrel seen from several places point the memory agent at the barrel's cells."""
    env = UnderwaterEnv(world_seed=9002)
    agent = MemoryAgent(embedder)
    _remember_barrel_views(env, agent, embedder)
    place = agent.recall_target_place()
    barrel_cells = {tuple(c) for c in env.world.instance_cells("barrel")[0]}
    assert place is not None and place.viewpoints >= 2
    assert min(abs(place.cell[0] - bx) + abs(place.cell[1] - by) for bx, by in barrel_cells) <= 1


def _remember_barrel_views(
    env: UnderwaterEnv, agent: MemoryAgent, embedder: ClipEmbedder, on_trail: bool = True, recorded: bool = True
) -> None:
    """Frames of the barrel from several places (and other frames), as if taken in a previous task
    (``recorded``: the map kept where the recogniser found each kind in them, as ``update`` does;
    False: frames in memory the map never saw, as implanted ones)."""
    obs, _ = env.reset(seed=0, options={"task": "barrel"})
    agent.reset(obs, env.sensor_spec)
    agent.grid.occupied[:] = env.world.kinds > 0  # the map a previous task would have built
    agent.grid.free[:] = env.world.kinds == 0
    reach = agent.spec.view_range_m / agent.spec.cell_size_m
    for i, ((x, y, d), o) in enumerate(_frames_facing(env, "barrel")):
        vec = embedder.embed_images(o["image"][None])[0]
        agent.memory.observe(vec, FrameMeta("r", "wreck", 0, i, float(x), float(y), d))
        agent.trail[y, x] = on_trail  # where the robot stood when it took the frame
        if recorded:
            found = agent.labeller.probabilities(vec[None])[0][: len(TARGET_KINDS)] >= agent.config.recheck_probability
            agent.grid.mark_recognised((x, y, d), agent.view_rays, reach, found)
    for i in range(40):  # plenty of other memories (their poses are made up, so none may show the barrel)
        o, _ = env.reset(seed=i, options={"task": "wreck", "start": "random"})
        if env.visible_pixels().get("barrel", 0) == 0:
            agent.memory.observe(
                embedder.embed_images(o["image"][None])[0], FrameMeta("r", "wreck", 0, 100 + i, 0.0, 0.0, 0)
            )


def test_frames_from_where_the_robot_never_stood_are_not_trusted(embedder: ClipEmbedder) -> None:
    """True frames of the barrel, but at poses off the robot's own trail (implanted): no recall."""
    env = UnderwaterEnv(world_seed=9002)
    agent = MemoryAgent(embedder)
    _remember_barrel_views(env, agent, embedder, on_trail=False)
    assert agent.recall_target_place() is None
    agent.config.own_trail_only = False
    assert agent.recall_target_place() is not None


def test_a_remembered_sighting_the_map_never_recognised_is_not_trusted(embedder: ClipEmbedder) -> None:
    """True frames of the barrel at poses on the robot's own trail, but the map never recorded the
    recogniser finding a barrel there (frames written into memory, never seen: implanted): no
    recall. The map's record of the same frames brings recall back; so does the switch off, or
    drifting odometry (where the switch does not act)."""
    env = UnderwaterEnv(world_seed=9002)
    agent = MemoryAgent(embedder)
    _remember_barrel_views(env, agent, embedder, recorded=False)
    assert agent.spec is not None and agent.spec.exact_pose
    assert agent.recall_target_place() is None
    agent.config.recall_where_recognised = False
    assert agent.recall_target_place() is not None
    agent.config.recall_where_recognised = True
    agent.spec = dataclasses.replace(agent.spec, odometry_drift_pct=1.0)
    assert agent.recall_target_place() is not None
    recorded = MemoryAgent(embedder)
    _remember_barrel_views(env, recorded, embedder)
    place = recorded.recall_target_place()
    barrel_cells = {tuple(c) for c in env.world.instance_cells("barrel")[0]}
    assert place is not None and min(abs(place.cell[0] - bx) + abs(place.cell[1] - by) for bx, by in barrel_cells) <= 1


def test_the_map_records_where_a_kind_was_found_whatever_the_switches(embedder: ClipEmbedder) -> None:
    """With both checks that read the record off, the robot still keeps it: a map saved by such a
    run and loaded by one with the checks on does not send every real sighting away."""
    env = UnderwaterEnv(world_seed=9002)
    (pose, obs), *_ = _frames_facing(env, "barrel")
    agent = MemoryAgent(embedder, config=MemoryAgentConfig(contradict_by_map=False, recall_where_recognised=False))
    agent.reset(obs, env.sensor_spec)
    agent.act(obs)
    assert agent.kind_probabilities[TARGET_KINDS.index("barrel")] >= agent.config.recheck_probability
    assert agent.grid is not None and agent.grid.recognised_by_kind[TARGET_KINDS.index("barrel")].any()


def test_a_rejected_place_discredits_the_frames_that_voted_for_it(embedder: ClipEmbedder, tmp_path: Path) -> None:
    """After rejection, the same frames cannot send the robot elsewhere; the state survives saving."""
    env = UnderwaterEnv(world_seed=9002)
    agent = MemoryAgent(embedder)
    _remember_barrel_views(env, agent, embedder)
    agent.recalled = place = agent.recall_target_place()
    assert place is not None and place.views
    agent._reject_recalled()
    mission = agent.recognizer.mission
    assert place.cell in agent.rejected_places[mission] and place.views <= agent.discredited_views[mission]
    assert all(pose not in place.views for pose, _ in agent.sightings())
    agent.save_state(tmp_path / "state")
    fresh = MemoryAgent(embedder)
    fresh.load_state(tmp_path / "state")
    assert fresh.discredited_views == agent.discredited_views and fresh.rejected_places == agent.rejected_places
    obs, _ = env.reset(seed=0, options={"task": "barrel"})
    fresh.reset(obs, env.sensor_spec)
    assert np.array_equal(fresh.trail, agent.trail)


def test_after_the_last_allowed_rejection_the_remaining_sightings_are_searched_again(
    embedder: ClipEmbedder,
) -> None:
    """A false place rejected, and no more trips allowed on memory's word: the places the robot's
    other confident frames looked at count as unsearched, so exploration still goes there."""
    env = UnderwaterEnv(world_seed=9002)
    agent = MemoryAgent(embedder)
    _remember_barrel_views(env, agent, embedder)
    agent.config.max_recall_rejections = 1
    agent.grid.seen[:] = True  # the barrel's surroundings were looked at in the earlier task
    agent.recalled = RecalledPlace((1, 1), 1.0, 2, frozenset({(1, 2, 3)}))  # a false place elsewhere
    agent._reject_recalled()
    remaining = {pose for pose, p in agent.sightings() if p >= agent.config.memory_probability}
    assert remaining and remaining <= agent._rechecked
    assert all(not agent.grid.seen[y, x] for x, y, _ in remaining)


def test_weak_sightings_reopen_their_view_and_are_visited_when_nothing_is_sure(embedder: ClipEmbedder) -> None:
    """Frames that show the barrel, trusted too little to count as confident sightings, reopen what
    they looked at; with no confident sighting the robot goes to look where they point."""
    env = UnderwaterEnv(world_seed=9002)
    agent = MemoryAgent(embedder)
    _remember_barrel_views(env, agent, embedder)
    agent.config.memory_probability = 1.01  # no sighting is confident
    agent.config.visit_weak_sightings = False
    agent.grid.seen[:] = True
    assert agent.recall_target_place() is None
    assert (~agent.grid.seen).any() and agent._rechecked
    agent.config.visit_weak_sightings = True
    place = agent.recall_target_place()
    assert place is not None
    cells = np.concatenate(env.world.instance_cells("barrel"))
    assert np.min(np.hypot(cells[:, 0] - place.cell[0], cells[:, 1] - place.cell[1])) <= 2


def test_a_sighting_where_the_map_looked_closely_and_recognised_nothing_is_not_trusted(
    embedder: ClipEmbedder, tmp_path: Path
) -> None:
    """True frames of the barrel, but the map says every cell around it was looked at from within
    the barrel's detection range and no frame there recognised a barrel (as for a false memory
    planted on the robot's trail): no recall. Once a frame really recognised it there, recall
    returns; the map's record survives saving."""
    env = UnderwaterEnv(world_seed=9002)
    agent = MemoryAgent(embedder, config=MemoryAgentConfig(recall_where_recognised=False))
    _remember_barrel_views(env, agent, embedder, recorded=False)
    assert agent.recall_target_place() is not None
    barrel = TARGET_KINDS.index("barrel")
    agent.grid.searched_by_kind[barrel] = True
    assert agent.recall_target_place() is None
    agent.config.contradict_by_map = False
    assert agent.recall_target_place() is not None
    agent.config.contradict_by_map = True
    (pose, _), *_ = _frames_facing(env, "barrel")
    recognised = np.array([kind == "barrel" for kind in TARGET_KINDS])
    agent.grid.mark_recognised(pose, agent.view_rays, 2.0, recognised)
    place = agent.recall_target_place()
    assert place is not None and agent.grid.recognised_by_kind[barrel].sum() > 0
    agent.save_state(tmp_path / "state")
    fresh = MemoryAgent(embedder)
    fresh.load_state(tmp_path / "state")
    obs, _ = env.reset(seed=0, options={"task": "barrel"})
    fresh.reset(obs, env.sensor_spec)
    assert np.array_equal(fresh.grid.recognised_by_kind, agent.grid.recognised_by_kind)
    assert np.array_equal(fresh.grid.searched_by_kind[barrel], agent.grid.searched_by_kind[barrel])


def test_a_sighting_votes_only_as_far_as_its_kind_is_ever_recognised(embedder: ClipEmbedder) -> None:
    """Oil drums in clear water are recognised from four cells at most: two frames facing an object
    seven cells ahead cannot have shown drums there (with the switch off they vote for it)."""
    env = UnderwaterEnv(tasks=("barrel",), world_seed=9002)
    obs, _ = env.reset(seed=0)
    agent = MemoryAgent(embedder)
    agent.reset(obs, env.sensor_spec)
    assert agent.grid is not None and agent.spec is not None and agent.spec.view_range_m >= 40.0
    agent.grid.reset()
    agent.grid.free[:] = True
    agent.grid.occupied[16, 17] = True
    agent.grid.free[16, 17] = False
    sightings = [((10, 16, 0), 0.9), ((10, 15, 0), 0.9)]  # facing east, seven cells short of it
    for pose, _ in sightings:  # the map recorded drums found in those views
        agent.grid.mark_recognised(pose, agent.view_rays, 10.0, np.array([k == "barrel" for k in TARGET_KINDS]))
    assert agent.rank_places(sightings) is None
    agent.config.recall_within_found_range = False
    place = agent.rank_places(sightings)
    assert place is not None and place.cell == (17, 16)


def test_a_map_saved_before_the_per_kind_layers_loads_with_them_empty(
    embedder: ClipEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot without the per-kind layers (older code) loads, the layers empty: nothing counts as
    searched for a kind, nothing is contradicted, and with no record of where each kind was found,
    remembered sightings are not checked against one. A snapshot with only some of them is refused."""
    env = UnderwaterEnv(world_seed=9002)
    agent = MemoryAgent(embedder)
    _remember_barrel_views(env, agent, embedder)
    agent.grid.searched_by_kind[:] = True
    monkeypatch.setattr(MemoryAgent, "_KIND_LAYERS", ())
    agent.save_state(tmp_path / "old")
    monkeypatch.setattr(MemoryAgent, "_KIND_LAYERS", ("searched_by_kind.barrel",))
    agent.save_state(tmp_path / "partial")
    monkeypatch.undo()
    fresh = MemoryAgent(embedder)
    fresh.load_state(tmp_path / "old")
    obs, _ = env.reset(seed=0, options={"task": "barrel"})
    fresh.reset(obs, env.sensor_spec)
    assert not fresh.grid.searched_by_kind.any() and not fresh.grid.recognised_by_kind.any()
    assert np.array_equal(fresh.grid.occupied, agent.grid.occupied)
    assert fresh.recall_target_place() is not None
    with pytest.raises(MemoryLoadError, match="holds arrays"):
        MemoryAgent(embedder).load_state(tmp_path / "partial")
