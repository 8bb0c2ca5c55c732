"""The agent side of instance goals: description and image goals, the new memory rows."""

from __future__ import annotations

import numpy as np
import pytest

from embodmem.agents.explorer import FrontierExplorer
from embodmem.agents.naive_agent import NaiveRetrievalAgent
from embodmem.agents.recognizer import check_goal_image, describe_goal_image, named_variant, negative_prompts
from embodmem.agents.variants import VARIANTS as ROWS
from embodmem.embedding.checkpoints import DEFAULT_MODEL as VARIANTS_MODEL
from embodmem.embedding.checkpoints import VARIANTS_CHECKPOINT
from embodmem.embedding.embedder import ClipEmbedder
from embodmem.envs.objects import KIND_VARIANTS, VARIANTS
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.memory import AgentMemory, MemoryConfig
from embodmem.runner import run_episode

WORLD = 1003  # dev split


@pytest.fixture(scope="module")
def embedder() -> ClipEmbedder:
    return ClipEmbedder(VARIANTS_MODEL, VARIANTS_CHECKPOINT, threads=1)  # the CLIP that tells variants apart


def test_description_negatives_are_the_siblings() -> None:
    negatives = negative_prompts("find the capsized sunken ship")
    assert named_variant("find the capsized sunken ship in deep water").name == "capsized"
    assert {"the upright sunken ship", "the sunken ship with a white hull"} <= set(negatives)
    assert "a sunken ship" not in negatives and "the capsized sunken ship" not in negatives
    assert "oil drums" in negatives
    phrases = {v.phrase for v in VARIANTS}
    assert not phrases & set(negative_prompts("find a sunken ship"))  # a category goal: kinds only


@pytest.mark.parametrize(
    ("image", "message"),
    [
        (
            np.ones((32, 32, 3), np.uint8),
            r"goal_image: shape \(32, 32, 3\) dtype uint8; allowed: shape \(64, 64, 3\) uint8",
        ),
        (np.ones((64, 64, 3), np.float32), r"goal_image: shape \(64, 64, 3\) dtype float32; allowed"),
        (np.zeros((64, 64, 3), np.uint8), "goal_image: all zeros"),
        ([[0]], "goal_image: expected a numpy array"),
    ],
)
def test_bad_goal_images_are_refused_in_one_line(image: object, message: str) -> None:
    with pytest.raises(ValueError, match=message) as err:
        check_goal_image(image, (64, 64, 3))
    assert "\n" not in str(err.value)


def test_goal_images_are_read_as_their_variant(embedder: ClipEmbedder) -> None:
    """The variants CLIP names the variant in every goal image of a world with variants."""
    env = UnderwaterEnv(tasks=("wreck",), world_seed=WORLD, instance_goals=True)
    env.reset(seed=0)
    from embodmem.envs.tasks import get_task

    wrong = []
    for kind, variants in KIND_VARIANTS.items():
        for v in variants:
            image = env.goal_image(get_task(f"image.{kind}.{v.name}"))
            got = describe_goal_image(embedder, image)
            if got.key != v.key:
                wrong.append((v.key, got.key))
    assert len(wrong) <= 1, wrong  # 24 goal images


def test_image_goal_episode_reaches_the_instance(embedder: ClipEmbedder) -> None:
    """An explorer given only the goal image finds that instance (not a sibling) in a dev world."""
    env = UnderwaterEnv(tasks=("image.wreck.capsized",), world_seed=WORLD)
    agent = FrontierExplorer(embedder)
    result = run_episode(env, agent, {"task": "image.wreck.capsized", "start": "fixed0"}, 0)
    assert agent.recognizer.mission == "find the capsized sunken ship"
    assert result.measures.wrong_instance == 0
    assert result.measures.success == 1, result.measures


def test_new_memory_rows_are_defined() -> None:
    assert (
        ROWS["memory_keep_all"].memory["index_factory"] == "Flat"
        and ROWS["memory_keep_all"].memory["byte_budget"] is None
    )
    assert ROWS["memory_naive"].naive and not ROWS["memory"].naive


def test_naive_retrieval_goes_where_the_most_similar_frame_looked(embedder: ClipEmbedder) -> None:
    """Warm on a second task, naive retrieval recalls a place from the top hit alone."""
    env = UnderwaterEnv(tasks=("wreck", "description.wreck.upright"), world_seed=WORLD)
    agent = NaiveRetrievalAgent(embedder, AgentMemory(MemoryConfig(dim=embedder.dim, consolidate_to=32)))
    agent.set_context("run", "wreck", 0)
    run_episode(env, agent, {"task": "wreck", "start": "fixed0"}, 0)
    agent.set_context("run", "description.wreck.upright", 1)
    obs, _ = env.reset(seed=1, options={"task": "description.wreck.upright", "start": "continue"})
    agent.reset(obs, env.sensor_spec)
    place = agent.recall_target_place()
    assert agent.queries >= 1 and len(agent.trace.retrievals) <= 5
    assert place is None or (place.support == 1.0 and place.viewpoints == 1 and len(place.views) == 1)


def test_fully_observed_twin_goes_to_the_named_instance(embedder: ClipEmbedder) -> None:
    """The memory-need control: handed the object map, the skeleton reaches the named instance
    nearly as the oracle does, with no memory of its own."""
    from embodmem.agents.config import MemoryAgentConfig
    from embodmem.agents.mapped_agent import MappedAgent

    env = UnderwaterEnv(tasks=("description.wreck.capsized",), world_seed=WORLD)
    agent = MappedAgent(embedder, AgentMemory(MemoryConfig(dim=embedder.dim)), MemoryAgentConfig(), env)
    agent.set_context("run", "description.wreck.capsized", 0)
    result = run_episode(env, agent, {"task": "description.wreck.capsized", "start": "fixed0"}, 0)
    assert result.measures.success == 1 and result.measures.wrong_instance == 0
    assert result.measures.spl >= 0.6, result.measures
