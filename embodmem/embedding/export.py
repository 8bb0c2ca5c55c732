"""Export a CLIP image tower, with its preprocessing, to ONNX for the agent's one-frame hot path.

An agent embeds one frame per step. At batch 1 PyTorch spends most of a tiny ViT's forward pass
dispatching ops; ONNX Runtime runs the same graph about 4x faster (``benchmarks/bench_embedder.py``
measures both). The graph takes the camera frame as the environment gives it (uint8,
1 x H x W x 3) and returns the unit vector, so a step costs one call.

    python -m embodmem.embedding.export          # the default checkpoint's two graphs and text table (the trainer runs this too)
    python -m embodmem.embedding.export --model ViT-B-32 --pretrained /path/vit_b_32.pt --frame-size 64

A second graph, ``<name>.batch<H>.onnx``, takes any number of frames (N x H x W x 3): the lockstep
runner (:mod:`embodmem.lockstep`) embeds many worlds' frames in one call through it, and every call
of the embedder with several frames takes it on the CPU. Its rows do not depend on what else is in
the batch (each frame's vector is the same in a batch of 1 or 64), but its last bits may differ from
the one-frame graph's, whose fixed shape ONNX Runtime optimises further.

Each graph is written next to the checkpoint and records the checkpoint's sha256; :func:`load_frame_session` refuses a graph whose checkpoint has changed, so a retrained
model never runs with a stale graph. Export needs ``onnx`` and ``onnxscript`` (the ``train`` extra);
running a graph needs only ``onnxruntime``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from embodmem.atomic import atomic_write_bytes
from embodmem.embedding.checkpoints import DEFAULT_CHECKPOINT, DEFAULT_MODEL, file_digest
from embodmem.embedding.texts import export_text_table

DIGEST_KEY = "checkpoint_sha256"


def frame_graph_path(checkpoint: str | Path, frame_size: int, batched: bool = False) -> Path:
    """Where the ONNX graph for ``checkpoint`` and frames of ``frame_size`` pixels lives (one frame, or
    ``batched``: any number)."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(f"{checkpoint.stem}.{'batch' if batched else 'frame'}{frame_size}.onnx")


def export_frame_encoder(
    model_name: str, checkpoint: str | Path, frame_size: int | None = None, batched: bool = False
) -> Path:
    """Write the ONNX graph of ``FrameEncoder`` for one frame of ``frame_size`` pixels (default: the
    model's input), or with ``batched`` for any number of them."""
    import torch

    from embodmem.embedding.model import FrameEncoder, create

    model = create(model_name, checkpoint)
    encoder = FrameEncoder(model.visual).float().eval()
    size = frame_size or encoder.image_size
    frame = torch.zeros(2 if batched else 1, size, size, 3, dtype=torch.uint8)
    dynamic = {"frames": {0: torch.export.Dim("batch", min=1, max=4096)}} if batched else None
    program = torch.onnx.export(
        encoder,
        (frame,),
        dynamo=True,
        input_names=["frame"],
        output_names=["embedding"],
        dynamic_shapes=dynamic,
        verbose=False,
    )
    assert program is not None  # dynamo export always returns its program
    proto = program.model_proto
    entry = proto.metadata_props.add()
    entry.key, entry.value = DIGEST_KEY, file_digest(checkpoint)
    return atomic_write_bytes(frame_graph_path(checkpoint, size, batched), proto.SerializeToString())


def load_frame_session(checkpoint: str | Path, frame_size: int, threads: int = 1, batched: bool = False) -> Any:
    """An ONNX Runtime session for ``checkpoint``'s frame graph (``batched``: the batch graph), or
    ``None`` if none matches it."""
    path = frame_graph_path(checkpoint, frame_size, batched)
    if not path.is_file():
        return None
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, threads)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    if session.get_modelmeta().custom_metadata_map.get(DIGEST_KEY) != file_digest(checkpoint):
        return None
    return session


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Export a CLIP image tower (with preprocessing) to ONNX, and the project's texts' vectors."
    )
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--pretrained", type=Path, default=DEFAULT_CHECKPOINT, help="local checkpoint")
    parser.add_argument("--frame-size", type=int, default=None, help="camera frame size (default: the model's input)")
    args = parser.parse_args(argv)
    for batched in (False, True):
        print(export_frame_encoder(args.model, args.pretrained, args.frame_size, batched))
    print(export_text_table(args.model, args.pretrained))


if __name__ == "__main__":
    main()
