"""The failure modes behind the safeguards, each reproduced on a hand-built map or a dev world's frame and designed
out behind its switch (agents/config.py: clean_background_stop, confirm_centre_adjacent,
centre_at_scale_for_instances, coverage_by_kind, face_objects_in_fog, face_objects_across_view,
face_passing_objects_in_fog, fog_limited_look, restart_when_stuck, seen_within_detection_range), and the same situation with the
switch off, where the old behaviour shows. Which are on by default: agents/config.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from embodmem.agents.config import MemoryAgentConfig
from embodmem.agents.explorer import FrontierExplorer
from embodmem.agents.mapping import OccupancyGrid
from embodmem.agents.memory_agent import MemoryAgent
from embodmem.agents.recognizer import (
    DETECTION_RANGE_CELLS,
    FOUND_UP_TO_CELLS,
    detection_range,
    found_up_to,
    mission_kind,
)
from embodmem.embedding.embedder import ClipEmbedder
from embodmem.envs.objects import TARGET_KINDS
from embodmem.envs.underwater import UnderwaterEnv


@pytest.fixture(scope="module")
def embedder() -> ClipEmbedder:
    return ClipEmbedder(threads=1)


SAFEGUARDS_OFF: dict[str, bool] = {
    "clean_background_stop": False,
    "confirm_centre_adjacent": False,
    "centre_at_scale_for_instances": False,
    "coverage_by_kind": False,
    "face_objects_in_fog": False,
    "face_objects_across_view": False,
    "face_passing_objects_in_fog": False,
    "look_beside_objects_in_fog": False,
    "fog_limited_look": False,
    "restart_when_stuck": False,
    "seen_within_detection_range": False,
    "contradict_by_map": False,
    "recall_within_found_range": False,
}
"""The agent without the safeguards (all but fog_limited_look and
seen_within_detection_range are on by default): each test turns on
the one it is about, so the old behaviour and the switch's effect show side by side."""


def _config(**switches: bool | float) -> MemoryAgentConfig:
    return MemoryAgentConfig(**{**SAFEGUARDS_OFF, **switches})


def _dev_case(
    embedder: ClipEmbedder, world: int, task: str, start: tuple[int, int, int], **switches: bool
) -> tuple[bool, float, int]:
    """One task of a dev world from a given pose, the explorer with ``switches`` on the old agent:
    (success, distance to the target in m, steps)."""
    env = UnderwaterEnv(tasks=(task,), world_seed=world, max_steps=400)
    obs, info = env.reset(seed=0, options={"task": task, "start_pose": start})
    agent = FrontierExplorer(embedder, _config(**switches))
    agent.reset(obs, env.sensor_spec)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        done = terminated or truncated
    return bool(info["success"]), round(float(info["distance_m"]), 1), env.step_count


def _open_water(agent: FrontierExplorer) -> OccupancyGrid:
    """The agent's blank map with every cell known free (open water), for a hand-built scene."""
    assert agent.grid is not None
    agent.grid.free[:] = True
    return agent.grid


def _agent(embedder: ClipEmbedder, task: str, agent_type: type = FrontierExplorer, **switches: bool | float):
    """An agent reset on a task of an open 32x32 world, its map then replaced by a blank one."""
    env = UnderwaterEnv(tasks=(task,), world_seed=1001, max_steps=50)
    obs, _ = env.reset(seed=0)
    agent = agent_type(embedder, config=_config(**switches))
    agent.reset(obs, env.sensor_spec)
    assert agent.grid is not None
    agent.grid.reset()
    return agent, obs


def test_detection_ranges_cover_every_kind_and_shrink_in_deep_water() -> None:
    assert set(DETECTION_RANGE_CELLS) == set(TARGET_KINDS)
    assert all(
        deep <= shallow or k in ("wreck", "wind_station") for k, (shallow, deep) in DETECTION_RANGE_CELLS.items()
    )
    assert detection_range("barrel", 25.0) < detection_range("barrel", 40.0) <= 4
    assert set(FOUND_UP_TO_CELLS) == set(TARGET_KINDS)
    for kind, light in ((k, v) for k in TARGET_KINDS for v in (25.0, 40.0)):
        farthest = found_up_to(kind, light)  # found sometimes at least as far as found reliably
        assert farthest is None or detection_range(kind, light) <= farthest
    assert mission_kind("find the oil drums with a yellow band") == "barrel"


# ---------------------------------------------------------------- (a) an occluder taken for the target


def _cable_before_wreck(agent: FrontierExplorer) -> tuple[int, int]:
    """A two-cell cable at (10-11, 15), a wreck (2x4 cells, 12-13 x 9-12) three to six cells north
    of it; the robot south of the cable. Returns the cable cell straight ahead of the robot."""
    grid = agent.grid
    assert grid is not None
    grid.free[5:25, 5:25] = True
    for x, y in [(10, 15), (11, 15)] + [(x, y) for x in (12, 13) for y in range(9, 13)]:
        grid.mark_occupied(x, y)
    agent.pose = (11, 16, 3)
    return (11, 15)


def test_an_occluder_is_judged_from_where_nothing_stands_behind_it(embedder: ClipEmbedder) -> None:
    off, _ = _agent(embedder, "wreck")
    cable = _cable_before_wreck(off)
    assert off.viewing_cells(cable)[16, 11]  # old: judged from the south, the wreck behind it in view
    on, _ = _agent(embedder, "wreck", clean_background_stop=True)
    _cable_before_wreck(on)
    viewing = on.viewing_cells(cable)
    assert viewing.any() and not viewing[16, 11]
    assert viewing[14, 11]  # from the north, facing south: open water behind the cable
    assert cable in on._judged_clean
    # The answer is remembered while the map stands (an approach asks every step), not after it changes.
    assert on.grid is not None
    on.grid.mark_occupied(11, 18)  # a rock behind the cable, seen from the north
    again = on.viewing_cells(cable)
    fresh, _ = _agent(embedder, "wreck", clean_background_stop=True)
    _cable_before_wreck(fresh)
    assert fresh.grid is not None
    fresh.grid.mark_occupied(11, 18)
    assert not again[14, 11] and (again == fresh.viewing_cells(cable)).all()


def test_an_occluder_ruled_out_from_a_clean_view_takes_its_object_with_it(embedder: ClipEmbedder) -> None:
    """Facing the cable from the north, the frame does not show a wreck: the cable, both cells, is
    out, and the next detection is placed beyond it (the wreck)."""
    agent, obs = _agent(embedder, "wreck", clean_background_stop=True)
    cable = _cable_before_wreck(agent)
    agent.pose = (11, 14, 1)  # north of the cable, facing it
    agent.candidate = cable
    agent.last_probability = 0.0  # what the frame of open water behind the cable says
    agent.viewing_cells(cable)
    action = agent.approach_action(obs)
    assert action is None and {(10, 15), (11, 15)} <= agent.rejected and agent.candidate is None


def test_a_crowded_candidate_must_show_the_target_in_the_middle_of_the_view(embedder: ClipEmbedder) -> None:
    """Judged from next to it with other things behind it (no clean viewing cell), a frame that
    shows the target somewhere (whole frame above the bar) but open water in the middle does not
    stop the robot with the switch on; the old agent stops."""
    water = np.zeros((64, 64, 3), np.uint8)
    water[:] = (20, 60, 90)
    for switch, expect in ((False, True), (True, False)):
        agent, obs = _agent(embedder, "wind_station", clean_background_stop=switch)
        agent.pose = (17, 25, 3)
        agent.last_probability = 0.94  # the whole frame: the wind station at its edge
        assert agent.confirmed_ahead(dict(obs, image=water), (17, 24)) is expect


def test_from_next_to_a_candidate_the_middle_of_the_view_must_agree(embedder: ClipEmbedder) -> None:
    """Judged from next to it with a clean background, a frame that shows the target only at its
    edge (whole frame above the bar, open water in the middle) stops the old agent, not the new."""
    water = np.zeros((64, 64, 3), np.uint8)
    water[:] = (20, 60, 90)
    for switch, expect in ((False, True), (True, False)):
        agent, obs = _agent(embedder, "wind_station", confirm_centre_adjacent=switch)
        agent.pose = (17, 25, 3)
        agent.last_probability = 0.94
        assert agent.confirmed_ahead(dict(obs, image=water), (17, 24)) is expect


def test_from_next_to_a_low_pipeline_the_middle_is_judged_at_its_own_scale() -> None:
    """Dev world 1007, "find the white oil pipeline", from (6, 5) facing the pipeline one cell north:
    the pipeline is a band along the bottom of the frame. The whole frame shows it; the middle half
    of the columns stretched to the frame's width does not (the middle check alone never stops
    there), at its own scale it does."""
    from embodmem.embedding.checkpoints import DEFAULT_MODEL, VARIANTS_CHECKPOINT

    variants = ClipEmbedder(DEFAULT_MODEL, VARIANTS_CHECKPOINT, threads=1)
    task = "description.pipeline.white"
    env = UnderwaterEnv(tasks=(task,), world_seed=1007, instance_goals=True, max_steps=50)
    obs, _ = env.reset(seed=0, options={"task": task, "start_pose": (6, 5, 3)})
    for switch, expect in ((False, False), (True, True)):
        agent = FrontierExplorer(variants, _config(confirm_centre_adjacent=True, centre_at_scale_for_instances=switch))
        agent.reset(obs, env.sensor_spec)
        agent.pose = (6, 5, 3)
        agent.last_probability = float(agent.recognizer.probability(variants.embed_images(obs["image"][None]))[0])
        assert agent.last_probability > 0.9
        assert agent.confirmed_ahead(obs, (6, 4)) is expect


def test_the_dev_world_case_of_a_cable_before_the_view_of_a_wind_station(embedder: ClipEmbedder) -> None:
    """Dev world 1234, find the wind power station from (15, 11) facing south: a three-cell cable is
    straight ahead and the wind station five cells off, at the edge of the view. The old agent takes
    the cable for it and stops 25 m short after 6 steps; with the switch the cable is ruled out by
    the middle of the view and the robot stops by the wind station."""
    outcomes = {
        switch: _dev_case(embedder, 1234, "wind_station", (15, 11, 1), confirm_centre_adjacent=switch)
        for switch in (False, True)
    }
    assert outcomes[False] == (False, 25.0, 6) and outcomes[True][0], outcomes


def test_a_lone_object_with_nothing_behind_keeps_every_viewing_cell(embedder: ClipEmbedder) -> None:
    off, _ = _agent(embedder, "barrel")
    on, _ = _agent(embedder, "barrel", clean_background_stop=True)
    for agent in (off, on):
        _open_water(agent)
        agent.grid.mark_occupied(16, 16)
    assert (off.viewing_cells((16, 16)) == on.viewing_cells((16, 16))).all()


def test_with_clutter_all_round_the_old_viewing_cells_remain(embedder: ClipEmbedder) -> None:
    """Judged from next to it only: whichever side, another object stands three cells behind."""
    on, _ = _agent(embedder, "barrel", clean_background_stop=True, stop_range_cells=1.0)
    grid = _open_water(on)
    for x, y in [(16, 16), (16, 13), (16, 19), (13, 16), (19, 16), (14, 14), (18, 18), (14, 18), (18, 14)]:
        grid.mark_occupied(x, y)
    off, _ = _agent(embedder, "barrel", stop_range_cells=1.0)
    assert off.grid is not None
    off.grid.occupied[:] = grid.occupied
    assert on.viewing_cells((16, 16)).sum() == 4
    assert (on.viewing_cells((16, 16)) == off.viewing_cells((16, 16))).all()


# ---------------------------------------------------------------- (b) coverage without detection


def test_coverage_counts_for_a_kind_only_within_its_detection_range(embedder: ClipEmbedder) -> None:
    """Task 1 (wreck) looks at a cell four cells ahead: searched for wrecks (recognised there), not
    for oil drums (missed from four cells in 60% of frames). Task 2 (barrel) then searches it again
    with the switch on; with it off the carried map calls it searched."""
    for switch, expect_seen in ((False, True), (True, False)):
        agent, _ = _agent(embedder, "wreck", MemoryAgent, coverage_by_kind=switch)
        grid = _open_water(agent)
        agent.pose = (10, 16, 0)  # facing east: (14, 16) is four cells ahead
        grid.look(agent.pose, agent.view_rays, agent.seen_range, agent.searched_range)
        if switch:
            grid.look_by_kind(agent.pose, agent.view_rays, agent.kind_ranges)
            assert grid.searched_by_kind[TARGET_KINDS.index("wreck"), 16, 14]
        grid.carry_to_next_mission("barrel" if switch else None)
        assert bool(grid.seen[16, 14]) is expect_seen
        assert grid.seen[16, 12]  # two cells ahead: searched for every kind either way


def test_a_carried_map_gives_each_mission_its_own_coverage(embedder: ClipEmbedder) -> None:
    env = UnderwaterEnv(tasks=("wreck", "barrel"), world_seed=1001, max_steps=30)
    agent = MemoryAgent(embedder, config=_config(coverage_by_kind=True))
    obs, _ = env.reset(seed=0, options={"task": "wreck"})
    agent.reset(obs, env.sensor_spec)
    for _ in range(30):
        obs, *_ = env.step(agent.act(obs))
    assert agent.grid is not None
    wreck = agent.grid.searched_by_kind[TARGET_KINDS.index("wreck")].copy()
    barrel = agent.grid.searched_by_kind[TARGET_KINDS.index("barrel")].copy()
    assert wreck.sum() > barrel.sum() > 0 and not (barrel & ~wreck).any()
    obs, _ = env.reset(seed=0, options={"task": "barrel"})
    agent.reset(obs, env.sensor_spec)
    assert (agent.grid.seen == barrel).all()


# ---------------------------------------------------------------- (c) deep water: faced but not seen


def test_deep_water_looks_again_closely_at_what_it_faced_from_afar(embedder: ClipEmbedder) -> None:
    """Deep water, oil drums: a cell faced from four cells (where the recogniser misses drums in
    every frame) counts as looked at on the first pass; once every reachable place has been looked
    at, the switch sends the robot back to such cells (and then only a look from two cells counts)
    instead of forgetting the whole search."""
    off, _ = _agent(embedder, "deep_barrel")
    on, _ = _agent(embedder, "deep_barrel", seen_within_detection_range=True)
    assert off.close_range is None and on.close_range == 2.0
    for agent in (off, on):
        grid = _open_water(agent)
        grid.mark_occupied(14, 16)
        agent.pose = (10, 16, 0)
        grid.look(agent.pose, agent.view_rays, agent.seen_range, agent.searched_range, agent.close_range)
        assert grid.seen[16, 13]  # first pass: faced from three cells, looked at
        grid.seen[:] = True  # ... and so was everything else reachable
        grid.seen[16, 14] = False
        agent.frontier_action()
    assert off.grid is not None and on.grid is not None
    assert not off.grid.seen.any()  # old: the whole search starts over
    assert not on.grid.seen[16, 13] and on.grid.seen[16, 11] and on._close_pass  # new: the far ones first
    assert on.grid.seen.sum() > 0 and (on.grid.seen == on.grid.close).all()
    shallow, _ = _agent(embedder, "wreck", seen_within_detection_range=True)
    assert shallow.close_range == 4.0  # a wreck is recognised from four cells: nothing to look at again


def test_the_dev_world_case_of_a_cable_before_a_wreck(embedder: ClipEmbedder) -> None:
    """Dev world 1006, find a sunken ship from (2, 27) facing west: the wreck is recognised behind a
    two-cell cable. The old agent stops next to the cable, 20.6 m from the wreck; with the switch
    the cable is judged from its far side, ruled out, and the robot stops by the wreck."""
    outcomes = {
        switch: _dev_case(embedder, 1006, "wreck", (2, 27, 2), clean_background_stop=switch)[:2]
        for switch in (False, True)
    }
    assert outcomes[False] == (False, 20.6) and outcomes[True][0], outcomes


def test_in_deep_water_a_look_counts_only_as_far_as_the_fog_shows_small_targets(embedder: ClipEmbedder) -> None:
    """Deep water hides oil drums beyond about 2.5 cells: with the switch a cell four cells ahead is
    not looked at yet, two cells ahead is; in clear water both count either way."""
    off, _ = _agent(embedder, "deep_barrel")
    on, _ = _agent(embedder, "deep_barrel", fog_limited_look=True)
    assert off.seen_range == 4.0 and on.seen_range == on.searched_range == 2.5
    for agent in (off, on):
        _open_water(agent)
        agent.pose = (10, 16, 0)
        agent.grid.look(agent.pose, agent.view_rays, agent.seen_range, agent.searched_range)
    assert off.grid is not None and on.grid is not None
    assert off.grid.seen[16, 14] and not on.grid.seen[16, 14]
    assert off.grid.seen[16, 12] and on.grid.seen[16, 12]
    shallow_off, _ = _agent(embedder, "barrel")
    shallow_on, _ = _agent(embedder, "barrel", fog_limited_look=True)
    assert shallow_off.seen_range == shallow_on.seen_range == 4.0


def test_in_deep_water_the_water_before_an_object_faced_from_afar_is_looked_at_again(embedder: ClipEmbedder) -> None:
    """Oil drums four cells ahead in deep water, recognised from two (a score of about 0.0001 from
    three or more): with the switch the cell in front of them stays to be looked at, so the search
    leads the robot up to them; the nearer water and the water beside them count as before. Once
    faced from two cells the drums are done, also for later looks from afar. With
    face_objects_across_view, a cell one ray withholds no other ray of the view marks (from three
    cells, rays beside the drums' cross the water in front of them). Objects on the map's edge (the
    survey area's wall) and clear water change nothing."""
    looks = {}
    for switch in (False, True):
        agent, _ = _agent(embedder, "deep_barrel", face_objects_in_fog=switch)
        grid = _open_water(agent)
        grid.mark_occupied(15, 16)  # the drums, four cells east of (11, 16)
        agent.pose = (11, 16, 0)
        grid.look(
            agent.pose, agent.view_rays, agent.seen_range, agent.searched_range, objects_within=agent.objects_within
        )
        looks[switch] = grid.seen.copy()
        if switch:
            assert agent.objects_within == 2.0 and not grid.faced_closely[16, 15]
            grid.seen[:] = True
            grid.seen[16, 14] = grid.seen[0, 0] = False  # left: the cell before the drums and a far corner
            agent.path = []
            agent.frontier_action()
            assert agent.trace.goal_cell == (14, 16)  # the nearer goal: up to the drums
            grid.look((13, 16, 0), agent.view_rays, 4.0, objects_within=2.0)  # two cells off: faced
            assert grid.faced_closely[16, 15] and grid.seen[16, 14]
            grid.seen[:] = False
            grid.look(agent.pose, agent.view_rays, 4.0, objects_within=2.0)  # from afar again: counts
            assert grid.seen[16, 14]
    assert looks[False][16, 14] and not looks[True][16, 14]  # old: the drums' surroundings are done
    assert looks[True][16, 12] and looks[True][14, 14]  # near water, and water beside the drums' ray
    # Three cells ahead, rays beside the drums' pass through the water in front of them: with
    # face_objects_across_view, what one ray withholds the whole view withholds.
    for across in (False, True):
        three, obs = _agent(embedder, "deep_barrel", face_objects_in_fog=True, face_objects_across_view=across)
        grid = _open_water(three)
        grid.mark_occupied(14, 16)
        assert three.spec is not None
        no_echo = np.full_like(obs["sonar"], three.spec.sonar_max_range_m)
        three.update({**obs, "pose": np.array([11, 16, 0], dtype=obs["pose"].dtype), "sonar": no_echo})
        assert three.pose == (11, 16, 0) and three.seen_range == 4.0
        assert bool(grid.seen[16, 13]) is not across and bool(grid.seen[16, 12]) is not across
        assert grid.seen[15, 12] and grid.seen[17, 13]  # the water beside them counts either way
    edge, _ = _agent(embedder, "deep_barrel", face_objects_in_fog=True)
    _open_water(edge)
    edge.grid.mark_occupied(31, 16)  # the survey area's wall
    edge.grid.look((27, 16, 0), edge.view_rays, 4.0, objects_within=2.0)
    assert edge.grid.seen[16, 30]
    shallow, _ = _agent(embedder, "barrel", face_objects_in_fog=True)
    wreck, _ = _agent(embedder, "deep_wreck", face_objects_in_fog=True)
    assert shallow.objects_within is None and wreck.objects_within is None  # clear water; a wreck shows at 4


def test_in_deep_water_a_small_object_passed_by_is_judged_face_on(embedder: ClipEmbedder) -> None:
    """Oil drums (two cells) three to five cells off the robot's path in deep water, where they show
    only from two: with the switch they become the candidate, and the robot heads for a cell to
    judge them from, facing them; a rock wall nearer by (seven joined cells) does not. Once a part
    has been faced from two cells, or the drums are ruled out (both parts with them), nothing is left
    to judge. Off without the switch, in clear water, for a kind that shows from afar (a wreck) and
    when the pose is not exact (drift or noise: the map's small phantom objects)."""
    for switch in (False, True):
        agent, obs = _agent(embedder, "deep_barrel", face_objects_in_fog=True, face_passing_objects_in_fog=switch)
        grid = _open_water(agent)
        grid.mark_occupied(14, 14)
        grid.mark_occupied(15, 14)  # the drums
        for x in range(11, 18):
            grid.mark_occupied(x, 19)  # a rock wall, three cells south of the robot
        agent.pose = (11, 16, 0)
        assert agent.face_passing_objects is switch
        action = agent.decide(obs)
        if not switch:
            assert agent.candidate is None and agent.trace.mode == "frontier"
            continue
        assert agent.candidate == (14, 14) and agent.trace.mode == "approach" and action != 0
        assert (
            agent.trace.goal_cell is not None
            and np.hypot(agent.trace.goal_cell[0] - 14, agent.trace.goal_cell[1] - 14) <= 2
        )
        grid.faced_closely[14, 15] = True  # the other drum stack, faced from two cells
        assert agent.passing_object() is None
        grid.faced_closely[:] = False
        agent.rule_out((14, 14))  # judged, not the target
        assert (15, 14) in agent.rejected and agent.passing_object() is None
    for task, drift, noise in (
        ("barrel", 0.0, 0.0),
        ("deep_wreck", 0.0, 0.0),
        ("deep_barrel", 0.5, 0.0),
        ("deep_barrel", 0.0, 0.3),
    ):
        other, obs = _agent(embedder, task, face_objects_in_fog=True, face_passing_objects_in_fog=True)
        assert other.spec is not None
        other.reset(obs, dataclasses.replace(other.spec, odometry_drift_pct=drift, odometry_noise_cells=noise))
        assert not other.face_passing_objects, (task, drift, noise)


def test_with_carried_coverage_the_water_beside_an_object_in_fog_is_looked_at_from_close(
    embedder: ClipEmbedder,
) -> None:
    """Oil drums in deep water, two cells north of the line the robot looks along: the water beside
    them is in view from three cells, where fog hides the drums. With odometry that drifts, a
    mission that began with coverage carried for its kind (here: one cell searched) leaves that
    water to be looked at until the drums are faced from two cells; one without (cold, the explorer)
    counts it as before, and so do exact odometry and the old agent. Water beside nothing counts."""
    seen = {}
    for switch, carried, drift in ((False, True, 0.5), (True, False, 0.5), (True, True, 0.0), (True, True, 0.5)):
        agent, obs = _agent(
            embedder,
            "deep_barrel",
            MemoryAgent,
            coverage_by_kind=True,
            face_objects_in_fog=True,
            look_beside_objects_in_fog=switch,
        )
        assert agent.grid is not None and agent.spec is not None
        agent.grid.searched_by_kind[TARGET_KINDS.index("barrel"), 3, 3] = carried  # searched in a task before
        agent.reset(obs, dataclasses.replace(agent.spec, odometry_drift_pct=drift))  # the next mission
        grid = _open_water(agent)
        grid.mark_occupied(14, 14)  # the drums
        agent.pose = (11, 16, 0)
        assert agent.look_beside_objects is (switch and carried and drift > 0)
        grid.look(
            agent.pose,
            agent.view_rays,
            agent.seen_range,
            agent.searched_range,
            objects_within=agent.objects_within,
            withhold_beside_objects=agent.look_beside_objects,
        )
        seen[(switch, carried, drift)] = grid.seen.copy()
        if agent.look_beside_objects:
            grid.look((12, 14, 0), agent.view_rays, 4.0, objects_within=2.0)  # faced from two cells
            assert grid.faced_closely[14, 14]
            grid.seen[:] = False
            grid.look(agent.pose, agent.view_rays, 4.0, objects_within=2.0, withhold_beside_objects=True)
            assert grid.seen[15, 14]  # faced closely: the water beside it counts from afar again
    for key in ((False, True, 0.5), (True, False, 0.5), (True, True, 0.0)):
        assert seen[key][15, 14]  # beside the drums, three cells off
    assert not seen[(True, True, 0.5)][15, 14]
    assert seen[(True, True, 0.5)][16, 14] and seen[(True, True, 0.5)][16, 12]  # beside nothing: counts
    shallow, _ = _agent(embedder, "barrel", look_beside_objects_in_fog=True)
    assert not shallow.look_beside_objects  # clear water: nothing changes


def test_a_search_fenced_off_by_the_map_starts_over_instead_of_stopping(embedder: ClipEmbedder) -> None:
    """Everything looked at but one cell, walled in by cells the robot bumped into: the old agent
    has nowhere to go and stops (frontier_action is None); with the switch it forgets what was
    looked at and goes on searching."""
    actions = {}
    for switch in (False, True):
        agent, _ = _agent(embedder, "barrel", restart_when_stuck=switch)
        grid = _open_water(agent)
        grid.seen[:] = True
        grid.seen[20, 20] = False
        for dx, dy in [(-1, 0), (1, 0), (0, -1), (0, 1)]:
            grid.mark_occupied(20 + dx, 20 + dy)
        agent.pose = (10, 10, 0)
        actions[switch] = agent.frontier_action()
        assert bool(grid.seen.any()) is (not switch)
    assert actions[False] is None and actions[True] is not None
