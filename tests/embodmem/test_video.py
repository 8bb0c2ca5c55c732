"""Tests for embodmem/video/: frame composition, captions and legend, PyAV encoding, the episode
recorder, RecordVideo."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from embodmem.agents.base import Agent, AgentTrace, Retrieval
from embodmem.agents.random_agent import RandomAgent
from embodmem.config import VideoConfig, VideoEpisodes, VideoFormat
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.memory import AgentMemory, FrameMeta, MemoryConfig, TopologicalMap
from embodmem.metrics_record import EpisodeIdentity, EpisodeRecord, SequenceContext
from embodmem.runner import EpisodeOutcome, EpisodeResult, StepEvent, run_episode
from embodmem.video import (
    EpisodeRecorder,
    MapSnapshot,
    Scene,
    StepRecord,
    caption,
    compose_frame,
    episode_video_name,
    legend_strip,
    memory_panel,
    render_frames,
    write_video,
)
from embodmem.video.panels import DETAIL_MIN_SIZE
from tests.embodmem.video_helpers import assert_faststart, decode, mp4_boxes, probe

ENV_KW = {"size": 24, "max_steps": 8, "image_size": 32}
SIZE = 64
FRAME_SHAPE = (124, 3 * SIZE, 3)
"""Frame at size 64: the three 64 px panels, and a 60 px text strip below them."""


def short_episode(n: int = 6, seed: int = 0) -> tuple[Scene, list[StepRecord]]:
    env = UnderwaterEnv(task="barrel", **ENV_KW)
    env.reset(seed=seed)
    scene = Scene.from_env(env)
    steps = []
    for a in [2, 1, 2, 2, 0, 2, 2, 1][:n]:
        obs, *_ = env.step(a)
        steps.append(StepRecord.capture(env.ground_truth(), obs, a))
    return scene, steps


def video_cfg(**kw) -> VideoConfig:
    base = {"enabled": True, "episodes": VideoEpisodes.all, "fps": 4, "size": 32, "format": VideoFormat.mp4}
    return VideoConfig(**{**base, **kw})


def labelled(outcome: EpisodeOutcome, success: int, task_index: int = 1) -> EpisodeResult:
    """The episode as a sequence's result, its success set to ``success`` (to test the selection)."""
    measures = dataclasses.replace(outcome.measures, success=success)
    identity = EpisodeIdentity(
        "r", "random", "single", 0, 0, "dev", "wreck_then_barrel", task_index, "barrel", 0, "far"
    )
    context = SequenceContext(outcome.trace.start_pose)
    return EpisodeResult(
        EpisodeRecord.finished(measures, outcome.wall_time_s, outcome.stats, identity, context), outcome
    )


# --------------------------------------------------------------------------- frames


def test_compose_frame_enlarges_camera_with_nearest_neighbour() -> None:
    cam = np.zeros((4, 4, 3), np.uint8)
    cam[0, 0] = (255, 0, 0)
    panel = np.zeros((SIZE, SIZE, 3), np.uint8)
    frame = compose_frame(cam, panel, panel, ["a", "b"], SIZE)
    assert frame.dtype == np.uint8 and frame.shape[1] == 3 * SIZE and frame.shape[0] > SIZE
    block = frame[:16, :16]
    assert (block == (255, 0, 0)).all(), "one camera pixel becomes a sharp 16x16 block"
    assert frame.shape[0] % 2 == 0 and frame.shape[1] % 2 == 0, "codecs need even sizes"


def test_render_frames_count_and_summary() -> None:
    scene, steps = short_episode()
    frames = list(
        render_frames(scene, steps, SIZE, {"success": 1, "spl": 0.5, "steps": 6, "path_length": 20.0}, hold_frames=3)
    )
    assert len(frames) == len(steps) + 3
    assert {f.shape for f in frames} == {FRAME_SHAPE}
    assert np.array_equal(frames[-1], frames[-3]), "the summary frame is held"
    assert frames[-1].mean() < frames[-4].mean(), "the summary dims the last frame"
    assert len(list(render_frames(scene, steps, SIZE, None))) == len(steps)


def test_memory_panel_shows_thumbnails_then_lets_them_go() -> None:
    scene, steps = short_episode()
    thumb = np.zeros((8, 8, 3), np.uint8)
    thumb[:] = (0, 255, 0)  # pure green appears nowhere else
    steps[1].query = "find oil drums"
    steps[1].retrievals = [
        Retrieval(0.9, 0, (3.0, 4.0, 1), "wreck", 12, thumb),
        Retrieval(0.4, None, (5.0, 5.0, 0), "wreck", 20),
    ]
    frames = list(render_frames(scene, steps, SIZE, None, hold_steps=2))

    def green(f: np.ndarray) -> int:
        mem = f[:SIZE, 2 * SIZE :]
        return int(((mem[..., 0] < 30) & (mem[..., 1] > 150) & (mem[..., 2] < 30)).sum())

    assert green(frames[0]) == 0
    assert green(frames[1]) > 50 and green(frames[3]) > 50, "shown at the query and held"
    assert green(frames[4]) == 0, "gone after hold_steps"


def test_topological_map_is_drawn_from_a_snapshot() -> None:
    topo = TopologicalMap(dim=2, node_distance=2.0)
    for x in (2.0, 5.0, 8.0):
        topo.observe(x, 3.0)
    snap = MapSnapshot.of(topo)
    assert snap.positions.shape == (3, 2) and sorted(map(tuple, snap.edges.tolist())) == [(0, 1), (1, 2)]
    topo.observe(20.0, 20.0)
    assert len(snap.positions) == 3, "a snapshot does not follow later changes"
    scene, steps = short_episode(2)
    plain = list(render_frames(scene, steps, SIZE, None))[-1]
    steps[-1].graph, steps[-1].current_node = snap, 1
    drawn = list(render_frames(scene, steps, SIZE, None))[-1]
    top = slice(SIZE, 2 * SIZE)
    assert not np.array_equal(plain[:SIZE, top], drawn[:SIZE, top])
    assert np.array_equal(plain[:SIZE, :SIZE], drawn[:SIZE, :SIZE]), "the camera panel is untouched"


# --------------------------------------------------------------------------- encoding


def test_the_faststart_check_can_fail(tmp_path: Path) -> None:
    """Without +faststart FFmpeg writes moov after mdat, and the box check sees it (the check is live)."""
    from embodmem.video.encoding import CODECS

    frames = [np.full((32, 32, 3), 40 * i, np.uint8) for i in range(4)]
    plain = tmp_path / "plain.mp4"
    write_video(plain, frames, fps=4, codec=dataclasses.replace(CODECS["mp4"], container_options={}))
    assert mp4_boxes(plain)[-2:] == ["mdat", "moov"]
    with pytest.raises(AssertionError, match="not faststart"):
        assert_faststart(plain)
    fast = tmp_path / "fast.mp4"
    write_video(fast, frames, fps=4)
    assert_faststart(fast)
    assert decode(fast)[3].mean() == pytest.approx(decode(plain)[3].mean())


@pytest.mark.parametrize(
    ("fmt", "container", "codec"), [("mp4", "mov,mp4,m4a,3gp,3g2,mj2", "h264"), ("webm", "matroska,webm", "vp9")]
)
def test_video_decodes_with_codec_frame_count_and_size(tmp_path: Path, fmt: str, container: str, codec: str) -> None:
    scene, steps = short_episode()
    path = tmp_path / f"episode.{fmt}"
    n = write_video(path, render_frames(scene, steps, SIZE, {"success": 0}, hold_frames=4), fps=4)
    assert n == len(steps) + 4
    info = probe(path)
    assert (info.container, info.codec, info.pix_fmt) == (container, codec, "yuv420p"), "browser-ready"
    assert (info.frames, info.height, info.width, info.fps) == (n, FRAME_SHAPE[0], FRAME_SHAPE[1], 4.0)
    assert list(tmp_path.iterdir()) == [path], "no temporary files left behind"
    if fmt == "mp4":
        assert_faststart(path)


def test_decoded_video_looks_like_the_rendered_frames(tmp_path: Path) -> None:
    scene, steps = short_episode()
    rendered = list(render_frames(scene, steps, SIZE, None))
    path = tmp_path / "v.mp4"
    write_video(path, rendered, fps=4)
    decoded = decode(path)
    assert len(decoded) == len(rendered)
    err = [float(np.abs(a.astype(np.int16) - b).mean()) for a, b in zip(decoded, rendered)]
    assert max(err) < 12, f"mean absolute error per frame {err}: lossy, but the picture survives"
    assert float(np.abs(decoded[0].astype(np.int16) - rendered[-1]).mean()) > max(err), "frames stay in order"


def test_write_video_is_atomic_and_checks_its_input(tmp_path: Path) -> None:
    path = tmp_path / "v.mp4"
    path.write_bytes(b"old")

    def broken():
        yield np.zeros((32, 32, 3), np.uint8)
        raise RuntimeError("renderer crashed")

    with pytest.raises(RuntimeError, match="renderer crashed"):
        write_video(path, broken())
    assert path.read_bytes() == b"old" and list(tmp_path.iterdir()) == [path]
    with pytest.raises(ValueError, match="shape"):
        write_video(path, [np.zeros((32, 32, 3), np.uint8), np.zeros((34, 32, 3), np.uint8)])
    with pytest.raises(ValueError, match="even"):
        write_video(path, [np.zeros((33, 32, 3), np.uint8)])
    with pytest.raises(ValueError, match="no frames"):
        write_video(path, [])
    with pytest.raises(ValueError, match=r"\.mp4, \.webm"):
        write_video(tmp_path / "v.avi", [np.zeros((32, 32, 3), np.uint8)])
    assert path.read_bytes() == b"old" and list(tmp_path.iterdir()) == [path]


def test_write_video_takes_other_encoder_settings(tmp_path: Path) -> None:
    """What ``benchmarks/bench_video.py --codecs`` compares: the same frames with other x264 settings."""
    from embodmem.video.encoding import CODECS, Codec

    scene, steps = short_episode()
    frames = list(render_frames(scene, steps, SIZE, None))
    default, crf = tmp_path / "default.mp4", tmp_path / "crf.mp4"
    assert write_video(default, frames, fps=4) == len(frames)
    assert write_video(crf, frames, fps=4, codec=Codec("mp4", "libx264", {"preset": "ultrafast", "crf": "23"})) == len(
        frames
    )
    assert CODECS["mp4"].options["qp"] == "18"
    assert probe(crf).codec == probe(default).codec == "h264" and probe(crf).frames == len(frames)
    assert crf.read_bytes() != default.read_bytes()


def test_episode_video_name_carries_episode_and_result() -> None:
    record = {
        "sequence": "wreck_then_barrel",
        "world_seed": 0,
        "seed": 0,
        "task_index": 1,
        "agent": "memory",
        "condition": "warm",
        "success": 1,
        "spl": 0.8214,
    }
    assert (
        episode_video_name(record)
        == "seq=wreck_then_barrel-world=0-seed=0-task=1-agent=memory-cond=warm-success=1-spl=0.82.mp4"
    )
    assert episode_video_name({"success": 0}, "webm") == "episode-success=0.webm"


# --------------------------------------------------------------------------- recorder


def record_episodes(
    tmp_path: Path, successes: list[int], seed: int = 0, out: str = "videos", **cfg
) -> tuple[EpisodeRecorder, list]:
    env = UnderwaterEnv(task="barrel", **ENV_KW)
    agent = RandomAgent(seed=seed, stop_probability=0.0)
    rec = EpisodeRecorder(video_cfg(**cfg), tmp_path / out)
    rec.bind(env, agent)
    results = []
    for i, s in enumerate(successes):
        outcome = run_episode(env, agent, {"task": "barrel"}, seed + i, on_step=rec.step)
        result = labelled(outcome, s, i + 1)
        rec.finish(result)
        results.append(result)
    return rec, results


@pytest.mark.parametrize(
    ("episodes", "expected"), [("all", [1, 2, 3]), ("failures", [2, 3]), ("first", [1]), ("none", [])]
)
def test_recorder_selects_episodes(tmp_path: Path, episodes: str, expected: list[int]) -> None:
    rec, results = record_episodes(tmp_path, [1, 0, 0], episodes=VideoEpisodes(episodes))
    assert [int(p.name.split("task=")[1].split("-")[0]) for p in rec.paths] == expected
    for r in results:
        if r.record.task_index in expected:
            assert (tmp_path / r.video).is_file()
            assert r.video.startswith("videos/") and f"success={r.record.success}" in r.video
        else:
            assert r.video is None
    for p in rec.paths:
        frames = decode(p)
        assert len(frames) == ENV_KW["max_steps"] + 4, "one frame per step plus one second of summary"
        assert frames[0].shape == (92, 96, 3)


def test_recorder_accepts_the_hydra_config(tmp_path: Path) -> None:
    from omegaconf import OmegaConf

    from embodmem.config import VideoConfig, VideoEpisodes, VideoFormat

    cfg = OmegaConf.structured(
        VideoConfig(enabled=True, episodes=VideoEpisodes.first, fps=2, size=32, format=VideoFormat.mp4)
    )
    rec = EpisodeRecorder(cfg, tmp_path)
    assert (rec.episodes, rec.format, rec.fps, rec.size) == ("first", "mp4", 2, 32)
    with pytest.raises(ValueError, match="video.episodes"):
        EpisodeRecorder(video_cfg(episodes="some"), tmp_path)


class ScriptedMemoryAgent(Agent):
    """Moves forward, writes every pose into a real AgentMemory (whose map the recorder draws) and
    'recalls' at step 3, keeping the retrievals on its trace."""

    name = "scripted"

    def __init__(self) -> None:
        super().__init__()
        self.memory = AgentMemory(MemoryConfig(dim=4, node_distance=2.0))
        self.nodes: list[int] = []
        self.t = 0

    def act(self, observation) -> int:
        self.t += 1
        x, y, h = observation["pose"]
        vec = np.eye(4, dtype=np.float32)[self.t % 4]
        self.nodes.append(self.memory.observe(vec, FrameMeta("run", "barrel", 0, self.t, float(x), float(y), int(h))))
        if self.t == 3:
            thumb = np.full((8, 8, 3), (0, 255, 0), np.uint8)
            self.trace = AgentTrace(
                "find oil drums", [Retrieval(0.7, 0, (1.0, 1.0, 0), "wreck", 4, thumb)], (5, 5), "recall"
            )
        return 2 if self.t % 3 else 1


def test_recorder_keeps_live_retrievals_with_thumbnails_and_the_graph(tmp_path: Path) -> None:
    env = UnderwaterEnv(task="barrel", **ENV_KW)
    agent = ScriptedMemoryAgent()
    rec = EpisodeRecorder(video_cfg(size=64), tmp_path)
    rec.bind(env, agent)
    obs, info = env.reset(seed=0)
    agent.reset(obs, env.sensor_spec)
    for _ in range(5):
        a = agent.act(obs)
        obs, *_ = env.step(a)
        rec.step(StepEvent(obs, env.ground_truth(), a, agent))
    ep = rec._episode
    assert ep is not None and [s.step for s in ep.steps] == [1, 2, 3, 4, 5]
    assert list(ep.live) == [3], "a retrieval list is taken once, at the step it appeared"
    assert ep.steps[2].mode == "recall" and ep.steps[2].goal_cell == (5, 5)
    assert ep.steps[-1].graph is not None and len(ep.steps[-1].graph.positions) == len(agent.memory.map)
    assert [s.current_node for s in ep.steps] == agent.nodes, "the node the memory placed each frame at"


def test_recorder_draws_no_graph_for_agents_without_a_map(tmp_path: Path) -> None:
    rec, _ = record_episodes(tmp_path, [0], size=32)
    assert rec.paths and rec.frames_written == ENV_KW["max_steps"] + 4


def test_default_video_config_writes_h264_mp4(tmp_path: Path) -> None:
    """The bar: videos are H.264 by default (the config group's defaults, not the test's)."""
    cfg = dataclasses.replace(VideoConfig(), enabled=True, size=32)
    rec, _ = record_episodes(tmp_path, [0], **dataclasses.asdict(cfg))
    assert rec.paths[0].suffix == ".mp4"
    info = probe(rec.paths[0])
    assert (info.codec, info.pix_fmt, info.frames) == ("h264", "yuv420p", ENV_KW["max_steps"] + cfg.fps)
    assert_faststart(rec.paths[0])


def test_same_seed_same_video_bytes_other_seed_other_video(tmp_path: Path) -> None:
    videos = {}
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        rec, _ = record_episodes(tmp_path, [0, 1], seed=seed, out=name)
        videos[name] = [p.read_bytes() for p in rec.paths]
    assert len(videos["a"]) == 2 and videos["a"] == videos["b"]
    assert videos["a"][0] != videos["c"][0]


def test_encoder_thread_error_is_reported_and_the_run_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error on the encoder thread surfaces when the episode ends, as ``video_error`` (nothing
    on disk, no temporary file); the next episode gets its video."""
    import embodmem.video.encoding as encoding_module

    encode = encoding_module._encode_planes
    calls = []

    def failing(*args):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("encoder crashed")
        encode(*args)

    monkeypatch.setattr(encoding_module, "_encode_planes", failing)
    _, results = record_episodes(tmp_path, [0, 0])
    records = [r.final_record().plain() for r in results]
    assert records[0]["video_error"] == "encoder crashed" and "video" not in records[0]
    assert "video_error" not in records[1] and (tmp_path / records[1]["video"]).is_file()
    assert list((tmp_path / "videos").iterdir()) == [tmp_path / records[1]["video"]], "no partial file"


# --------------------------------------------------------------------------- captions, tiles, legend


def test_caption_names_the_sequence_position_and_the_reference_task_separately() -> None:
    scene, _ = short_episode(1)
    scene = dataclasses.replace(scene, task="wreck", task_number=4, mission="find the sunken ship", world_seed=1018)
    first = scene.placed({"task_index": 1, "sequence": "wreck_then_barrel"})
    assert caption(first) == "task 1 of 2: wreck, find the sunken ship  (reference task 4, world 1018)"
    assert caption(scene.placed({"task_index": 3, "sequence": "wreck+barrel+aircraft"})).startswith(
        "task 3 of 3: wreck,"
    )
    assert caption(scene.placed({})).startswith("task: wreck,"), "no record: no invented position"


def test_caption_is_drawn_from_the_placed_scene() -> None:
    scene, steps = short_episode(1)
    one = list(render_frames(scene.placed({"task_index": 1, "sequence": "wreck_then_barrel"}), steps, SIZE, None))[0]
    two = list(render_frames(scene.placed({"task_index": 2, "sequence": "wreck_then_barrel"}), steps, SIZE, None))[0]
    assert np.array_equal(one[:SIZE], two[:SIZE]) and not np.array_equal(one[SIZE:], two[SIZE:])


def test_memory_tiles_show_match_task_and_step() -> None:
    thumb = np.zeros((8, 8, 3), np.uint8)
    base = Retrieval(0.82, 0, (3.0, 4.0, 1), "wreck", 133, thumb)
    size = 256
    panel = memory_panel([base], size, "find oil drums", 0, 5)
    tile = slice(0, size // 2)  # the first tile's column band; its labels sit on the black thumbnail

    def labels(r: Retrieval) -> np.ndarray:
        return memory_panel([r], size, "find oil drums", 0, 5)[:, tile]

    for changed in (
        dataclasses.replace(base, score=0.31),
        dataclasses.replace(base, task="barrel"),
        dataclasses.replace(base, step=7),
    ):
        assert not np.array_equal(labels(changed), panel[:, tile]), f"the tile shows {changed}"
    assert np.array_equal(labels(dataclasses.replace(base, node=9)), panel[:, tile]), "only what it says changes it"


def test_legend_under_the_map_from_the_default_size() -> None:
    scene, steps = short_episode(1)
    assert VideoConfig().size >= DETAIL_MIN_SIZE
    frame = list(render_frames(scene, steps, 256, None))[0]
    legend = legend_strip(3 * 256, 256)
    assert np.array_equal(frame[-legend.shape[0] :], legend), "the legend is the frame's last strip"
    robot_red = (legend[..., 0] > 200) & (legend[..., 1] < 80) & (legend[..., 2] < 80)
    assert robot_red.sum() > 10, "the robot glyph is drawn in the robot's colour"
    small = list(render_frames(scene, steps, SIZE, None))[0]
    assert small.shape == FRAME_SHAPE, "small videos (tests, thumbnails) have no legend"


def test_the_camera_panel_is_labelled_and_the_legend_says_what_target_and_goal_mean() -> None:
    from embodmem.video.panels import LEGEND_MEANINGS, camera_panel

    assert LEGEND_MEANINGS[0].startswith("target: ") and LEGEND_MEANINGS[1].startswith("goal: ")
    scene, steps = short_episode(1)
    for size in (DETAIL_MIN_SIZE, 256):
        frame = list(render_frames(scene, steps, size, None))[0]
        plain = camera_panel(steps[0].image, size)
        differs = np.any(frame[:size, :size] != plain, axis=2)
        band = _line_height_of(size) + 4
        assert differs[:band].sum() > 100 and not differs[band:].any(), "a label at the top, the view untouched below"
        legend = legend_strip(3 * size, size)
        rows_with_text = np.flatnonzero(np.any(legend != legend[0, -1], axis=(1, 2)))
        glyph_rows = legend_strip_rows(legend)
        assert glyph_rows >= 2, "the meanings add at least one line under the glyphs"
        assert rows_with_text.max() > legend.shape[0] - _line_height_of(size), "text down to the last line"
    small = list(render_frames(scene, steps, SIZE, None))[0]
    assert np.array_equal(small[:SIZE, :SIZE], camera_panel(steps[0].image, SIZE)), "no label on thumbnails"


def _line_height_of(size: int) -> int:
    from embodmem.video.panels import _line_height

    return _line_height(size)


def legend_strip_rows(legend: np.ndarray) -> int:
    """Bands of text rows in a legend strip (runs of rows with any non-background pixel)."""
    busy = np.any(legend != legend[0, -1], axis=(1, 2))
    return int(np.sum(busy[1:] & ~busy[:-1]) + busy[0])


# --------------------------------------------------------------------------- Gymnasium's RecordVideo


def test_rgb_array_render_is_a_steady_video_frame() -> None:
    env = gym.wrappers.RenderCollection(UnderwaterEnv(task="wreck", render_mode="rgb_array", render_size=64, **ENV_KW))
    env.reset(seed=0)
    for a in (2, 1, 2):
        env.step(a)
    frames = env.render()
    assert len(frames) == 4
    assert {(f.shape, f.dtype) for f in frames} == {((64, 128, 3), np.dtype(np.uint8))}


def test_record_video_wrapper_writes_a_decodable_video(tmp_path: Path) -> None:
    pytest.importorskip("moviepy", reason="Gymnasium's RecordVideo needs moviepy: pip install -e '.[gym-video]'")
    env = UnderwaterEnv(task="wreck", render_mode="rgb_array", render_size=64, **ENV_KW)
    folder = tmp_path / "videos"  # RecordVideo warns when its folder already exists
    env = gym.wrappers.RecordVideo(env, str(folder), episode_trigger=lambda _: True, disable_logger=True)
    env.reset(seed=0)
    done, n = False, 1
    while not done:
        _, _, terminated, truncated, _ = env.step(2)
        done, n = terminated or truncated, n + 1
    env.close()
    videos = sorted(folder.glob("*.mp4"))
    assert len(videos) == 1
    frames = decode(videos[0])
    assert len(frames) == n and frames[0].shape == (64, 128, 3)


# --------------------------------------------------------------------------- through the Hydra app


def test_video_on_through_the_app_writes_h264_videos_with_live_memory(tmp_path: Path) -> None:
    """``embodmem-run video=on`` (the app's run, the shipped config groups): one H.264 .mp4 per
    episode, linked from its metrics record."""
    from hydra import compose, initialize_config_module

    from embodmem.app import run

    overrides = ["video=on", "video.size=64", "env.max_steps=25", "logger.progress=false", "logger.plots=false"]
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    records = run(cfg, tmp_path)
    assert len(records) == 6 and all(r.video_error is None for r in records)
    for r in records:
        info = probe(tmp_path / r.video)
        assert r.video.endswith(".mp4") and (info.codec, info.pix_fmt) == ("h264", "yuv420p")
        assert_faststart(tmp_path / r.video)
        assert info.frames == r.steps + cfg.video.fps, "one frame per step, then one second of summary"
