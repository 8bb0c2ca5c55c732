"""Train the project's own small CLIP on frames rendered by the environments.

    python -m embodmem.embedding.train    # reproduces embodmem/assets/embodmem-tiny-clip.pt (2500 steps)
    python -m embodmem.embedding.train --variants only --out embodmem/assets/embodmem-tiny-clip-variants.pt

and exports the image tower with its preprocessing to ONNX beside it (the agent's hot path).

It uses open_clip's model, tokenizer and contrastive loss. Captions repeat (there are only so many
ways to say "a sunken ship"), so a batch holds many true pairs besides the diagonal; the loss
(:class:`SameClassClipLoss`, a subclass of open_clip's ``ClipLoss``) spreads each row's target over
all pairs that match instead of calling them negatives. ``--variants`` says which worlds the frames
come from: ``none`` (the category worlds, kind captions: the default checkpoint), ``only`` (the
worlds with appearance variants; half the target captions name the variant, "the capsized sunken
ship", and such a caption matches only frames of that variant, while a kind's caption matches every
variant of it: the ``variants`` checkpoint), or ``both`` (each world twice, half the frames each;
tried, and worse: ``benchmarks/results/embedder_variants_both_not_shipped.md``). Checkpoints are judged on
validation worlds every ``--eval-every`` steps and the best is kept (docs/design.md, "Known traps": quality
swings between checkpoints). Same arguments, same machine: same checkpoint.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from open_clip.loss import ClipLoss
from tqdm import tqdm

from embodmem.atomic import atomic_write_json
from embodmem.embedding.captions import caption
from embodmem.embedding.checkpoints import DEFAULT_CHECKPOINT, DEFAULT_MODEL
from embodmem.embedding.export import export_frame_encoder
from embodmem.embedding.frames import NO_TARGET, TRAIN_WORLDS, VALIDATION_WORLDS, FrameSet, render_frames
from embodmem.embedding.model import FrameEncoder, create, save_checkpoint, tokenizer
from embodmem.embedding.quality import evaluate, evaluate_variants
from embodmem.embedding.texts import export_text_table

VARIANT_MODES = ("none", "only", "both")
"""Which worlds training frames come from (``--variants``; see the module docstring)."""


class SameClassClipLoss(ClipLoss):
    """open_clip's CLIP loss with soft targets: every matching pair in the batch is a positive.

    Image i matches text j when they share the class key and text j either names no variant
    (``text_variants[j] == -1``) or names image i's variant.
    """

    def forward(
        self,
        image_features: torch.Tensor,
        text_features: torch.Tensor,
        logit_scale: torch.Tensor,
        classes: torch.Tensor,
        image_variants: torch.Tensor | None = None,
        text_variants: torch.Tensor | None = None,
    ) -> torch.Tensor:
        logits_per_image, logits_per_text = self.get_logits(image_features, text_features, logit_scale)
        match = classes[:, None] == classes[None, :]
        if image_variants is not None and text_variants is not None:
            match &= (text_variants[None, :] < 0) | (image_variants[:, None] == text_variants[None, :])
        match_f = match.float()
        targets_i = match_f / match_f.sum(dim=1, keepdim=True)
        if image_variants is None:  # symmetric: the same targets both ways (as the default checkpoint was trained)
            targets_t = targets_i
        else:
            targets_t = match_f.T / match_f.T.sum(dim=1, keepdim=True)
        loss_i = -(targets_i * F.log_softmax(logits_per_image, dim=1)).sum(dim=1).mean()
        loss_t = -(targets_t * F.log_softmax(logits_per_text, dim=1)).sum(dim=1).mean()
        return (loss_i + loss_t) / 2


def _class_keys(frames: FrameSet) -> np.ndarray:
    """Positives share a key: the target kind, or for target-free frames the thing in view."""
    return np.where(frames.label != NO_TARGET, frames.label, 100 + frames.distractor)


def embed_frames(encoder: FrameEncoder, images: np.ndarray) -> np.ndarray:
    """Unit image vectors for evaluation (no cache: frames here are all distinct)."""
    encoder.eval()
    out = []
    with torch.inference_mode():
        for i in range(0, len(images), 256):
            out.append(encoder(torch.from_numpy(images[i : i + 256])).numpy())
    encoder.train()
    return np.concatenate(out)


def train(
    out: Path,
    steps: int,
    batch_size: int,
    lr: float,
    eval_every: int,
    frames_per_world: int,
    seed: int,
    stop_at: int | None = None,
    threads: int = 1,
    variants: str = "none",
) -> dict:
    # One thread: bit-for-bit reproducible reductions, and no OpenMP spin-waiting against other
    # processes on a small machine (which made 2-thread steps several times slower here).
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    if variants not in VARIANT_MODES:
        raise ValueError(f"variants={variants!r} is not allowed; allowed: {', '.join(VARIANT_MODES)}")
    val_variant_frames: FrameSet | None = None
    if variants == "both":
        # Every training world twice, half the frames each: as the category world (every instance in
        # its kind's standard look) and as the world with variants.
        train_frames = FrameSet.concat(
            [
                render_frames(TRAIN_WORLDS, frames_per_world // 2, seed=seed),
                render_frames(TRAIN_WORLDS, frames_per_world - frames_per_world // 2, seed=seed + 7, variants=True),
            ]
        )
        val_frames = render_frames(VALIDATION_WORLDS, 150, seed=seed + 1)
        val_variant_frames = render_frames(VALIDATION_WORLDS, 150, seed=seed + 1, variants=True)
    else:
        train_frames = render_frames(TRAIN_WORLDS, frames_per_world, seed=seed, variants=variants == "only")
        val_frames = render_frames(VALIDATION_WORLDS, 150, seed=seed + 1, variants=variants == "only")
    learn_variants = variants != "none"
    model = create(DEFAULT_MODEL, None)
    model.train()
    tok = tokenizer(DEFAULT_MODEL)
    encoder = FrameEncoder(model.visual)
    loss_fn = SameClassClipLoss()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1)
    warmup = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(1.0, s / steps)))
    )

    keys = _class_keys(train_frames)
    counts = np.bincount(train_frames.label)
    weights = 1.0 / counts[train_frames.label]
    weights /= weights.sum()  # every class (and "none") drawn equally often
    token_cache: dict[str, torch.Tensor] = {}

    def tokens(texts: list[str]) -> torch.Tensor:
        for t in texts:
            if t not in token_cache:
                token_cache[t] = tok([t])[0]
        return torch.stack([token_cache[t] for t in texts])

    best = {"score": -1.0}
    history = []
    start = time.perf_counter()
    last = min(steps, stop_at or steps)
    bar = tqdm(range(1, last + 1), desc="training tiny CLIP", unit="step")
    for step in bar:
        idx = rng.choice(len(train_frames), size=batch_size, p=weights)
        imgs = train_frames.images[idx]
        flip = rng.random(batch_size) < 0.5
        imgs = np.where(flip[:, None, None, None], imgs[:, :, ::-1], imgs)
        captions = [
            caption(
                int(train_frames.label[i]),
                bool(train_frames.deep[i]),
                int(train_frames.distractor[i]),
                rng,
                int(train_frames.variant[i]) if learn_variants else -1,
            )
            for i in idx
        ]
        texts = [text for text, _ in captions]
        image_features = encoder(torch.from_numpy(np.ascontiguousarray(imgs)))
        text_features = model.encode_text(tokens(texts), normalize=True)
        if learn_variants:
            image_variants = train_frames.variant[idx]
            text_variants = np.where([names for _, names in captions], image_variants, -1)
            loss = loss_fn(
                image_features,
                text_features,
                model.logit_scale.exp(),
                torch.from_numpy(keys[idx]),
                torch.from_numpy(image_variants),
                torch.from_numpy(text_variants),
            )
        else:
            loss = loss_fn(image_features, text_features, model.logit_scale.exp(), torch.from_numpy(keys[idx]))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        with torch.no_grad():
            model.logit_scale.clamp_(0, math.log(100))
        bar.set_postfix(loss=f"{loss.item():.3f}")
        if step % eval_every == 0 or step == last:
            vectors = embed_frames(encoder, val_frames.images)
            model.eval()
            with torch.inference_mode():
                texts_fn = lambda t: model.encode_text(tok(t), normalize=True).numpy()
                res = evaluate(vectors, val_frames, texts_fn)
                if val_variant_frames is not None:  # both: category figures from both kinds of world
                    variant_vectors = embed_frames(encoder, val_variant_frames.images)
                    in_variant_worlds = evaluate(variant_vectors, val_variant_frames, texts_fn)
                    res.update(evaluate_variants(variant_vectors, val_variant_frames, texts_fn))
                    res["min_p@5"] = min(res["min_p@5"], in_variant_worlds["min_p@5"])
                    res["min_acc"] = min(res["min_acc"], in_variant_worlds["min_acc"])
                elif learn_variants:
                    res.update(evaluate_variants(vectors, val_frames, texts_fn))
            model.train()
            if learn_variants:
                score = min(res["min_p@5"], res["min_acc"], res["min_vp@5"], res["min_vacc"]) + 0.1 * (
                    res["acc"] + res["vacc"]
                )
            else:
                score = min(res["min_p@5"], res["min_acc"]) + 0.1 * res["acc"]
            measures: dict[str, float] = {
                k: res[k] for k in ("min_p@5", "min_acc", "acc", "min_vp@5", "min_vacc", "vacc") if k in res
            }
            history.append({"step": step, "loss": float(loss.item()), "score": score, **measures})
            tqdm.write(
                f"step {step}: loss {loss.item():.3f} min_p@5 {res['min_p@5']:.2f} min_acc {res['min_acc']:.3f} "
                f"acc {res['acc']:.3f} min_vp@5 {res.get('min_vp@5', 1.0):.2f} min_vacc {res.get('min_vacc', 1.0):.3f}"
            )
            if score > best["score"]:
                best = {"score": score, "step": step, **res}
                save_checkpoint(model, out)
    info = {
        "model": DEFAULT_MODEL,
        "checkpoint": out.name,
        "seed": seed,
        "threads": threads,
        "variants": variants,
        "steps": steps,
        "stopped_at": last,
        "batch_size": batch_size,
        "lr": lr,
        "frames": len(train_frames),
        "train_worlds": [TRAIN_WORLDS.start, TRAIN_WORLDS.stop],
        "validation_worlds": [VALIDATION_WORLDS.start, VALIDATION_WORLDS.stop],
        "best_step": best.get("step"),
        "best_validation": {k: v for k, v in best.items() if k not in ("score", "step")},
        "history": history,
        "train_seconds": time.perf_counter() - start,
    }
    atomic_write_json(out.with_suffix(".train.json"), info)
    export_frame_encoder(DEFAULT_MODEL, out)  # the agent's one-frame path (ONNX Runtime)
    export_frame_encoder(DEFAULT_MODEL, out, batched=True)  # the lockstep runner's batches
    export_text_table(DEFAULT_MODEL, out)  # the project's texts, so that a CPU job needs no torch
    return info


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Train embodmem's own small CLIP on rendered frames.")
    parser.add_argument("--out", type=Path, default=DEFAULT_CHECKPOINT)
    parser.add_argument("--steps", type=int, default=2500, help="length of the learning-rate schedule")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--frames-per-world", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--stop-at",
        type=int,
        default=None,
        help="stop after this many steps (the learning-rate schedule still spans --steps)",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1: reproducible)")
    parser.add_argument(
        "--variants",
        choices=VARIANT_MODES,
        default="none",
        help="none: category worlds (the default checkpoint); only: worlds with appearance variants, "
        "captions naming them (the variants checkpoint); both: each world twice",
    )
    args = parser.parse_args(argv)
    info = train(
        args.out,
        args.steps,
        args.batch_size,
        args.lr,
        args.eval_every,
        args.frames_per_world,
        args.seed,
        args.stop_at,
        args.threads,
        args.variants,
    )
    print(json.dumps({k: info[k] for k in ("best_step", "train_seconds")}, indent=1))


if __name__ == "__main__":
    main()
