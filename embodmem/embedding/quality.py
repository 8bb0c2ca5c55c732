"""How well an embedder tells the target kinds apart, on frames from worlds it never saw.

Two measures, per target kind and per light level:
- retrieval precision@5: the agent's mission text ("find oil drums") as the query over a pool of
  frames of one light level; the share of the five best frames in which that kind is clearly visible;
- zero-shot accuracy: for frames whose dominant visible target is known, the share classified to the
  right kind among the eight class prompts.

And per appearance variant (:func:`evaluate_variants`, on frames of worlds with variants): p@5 of
the description goal's mission ("find the capsized sunken ship"), and zero-shot accuracy among the
same kind's three variants, each per light level.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from embodmem.embedding.captions import class_prompts, query_prompt, variant_prompts, variant_query_prompt
from embodmem.embedding.frames import CLASS_NAMES, NO_TARGET, FrameSet
from embodmem.envs.objects import KIND_INDEX, VARIANTS

N_KINDS = len(CLASS_NAMES) - 1


def evaluate(
    image_vectors: np.ndarray,
    frames: FrameSet,
    embed_texts: Callable[[list[str]], np.ndarray],
    k: int = 5,
) -> dict[str, float]:
    """Quality figures for precomputed unit image vectors of ``frames``.

    Returns flat keys: ``p@5/<kind>/<shallow|deep>``, ``acc/<kind>``, ``acc/<shallow|deep>``,
    ``min_p@5``, ``min_acc``, ``acc``.
    """
    out: dict[str, float] = {}
    for deep in (False, True):
        pool = np.nonzero(frames.deep == deep)[0]
        light = "deep" if deep else "shallow"
        queries = embed_texts([query_prompt(c, deep) for c in range(N_KINDS)])
        sims = queries @ image_vectors[pool].T
        for c in range(N_KINDS):
            top = pool[np.argsort(-sims[c], kind="stable")[:k]]
            out[f"p@{k}/{CLASS_NAMES[c]}/{light}"] = float(frames.visible[top, c].mean())
    prompts = embed_texts(class_prompts())
    has = frames.label != NO_TARGET
    pred = np.argmax(image_vectors[has] @ prompts.T, axis=1)
    truth = frames.label[has]
    correct = pred == truth
    for c in range(N_KINDS):
        sel = truth == c
        out[f"acc/{CLASS_NAMES[c]}"] = float(correct[sel].mean()) if sel.any() else float("nan")
        out[f"n/{CLASS_NAMES[c]}"] = float(sel.sum())
    deep = frames.deep[has]
    out["acc/shallow"] = float(correct[~deep].mean())
    out["acc/deep"] = float(correct[deep].mean())
    out["acc"] = float(correct.mean())
    out[f"min_p@{k}"] = min(v for key, v in out.items() if key.startswith(f"p@{k}/"))
    out["min_acc"] = min(out[f"acc/{CLASS_NAMES[c]}"] for c in range(N_KINDS))
    return out


def table(results: dict[str, float], k: int = 5) -> str:
    """Markdown table: one row per kind."""
    lines = [f"| kind | p@{k} shallow | p@{k} deep | zero-shot acc | frames |", "|---|---:|---:|---:|---:|"]
    for c in range(N_KINDS):
        name = CLASS_NAMES[c]
        lines.append(
            f"| {name} | {results[f'p@{k}/{name}/shallow']:.2f} | {results[f'p@{k}/{name}/deep']:.2f} | "
            f"{results[f'acc/{name}']:.3f} | {int(results[f'n/{name}'])} |"
        )
    lines.append(
        f"| **all** | min {min(results[f'p@{k}/{CLASS_NAMES[c]}/shallow'] for c in range(N_KINDS)):.2f} | "
        f"min {min(results[f'p@{k}/{CLASS_NAMES[c]}/deep'] for c in range(N_KINDS)):.2f} | "
        f"{results['acc']:.3f} (shallow {results['acc/shallow']:.3f}, deep {results['acc/deep']:.3f}) | |"
    )
    return "\n".join(lines)


def evaluate_variants(
    image_vectors: np.ndarray,
    frames: FrameSet,
    embed_texts: Callable[[list[str]], np.ndarray],
    k: int = 5,
) -> dict[str, float]:
    """Per-variant quality: ``vp@5/<kind.variant>/<light>``, ``vacc/<kind.variant>/<light>``,
    ``vn/<kind.variant>/<light>`` (frames), and ``min_vp@5``, ``min_vacc``, ``vacc``.

    Zero-shot here is among the three variants of the frame's (true) kind: it asks whether the
    embedder tells a capsized ship from an upright one, not a ship from drums.
    """
    out: dict[str, float] = {}
    for deep in (False, True):
        pool = np.nonzero(frames.deep == deep)[0]
        light = "deep" if deep else "shallow"
        queries = embed_texts([variant_query_prompt(i, deep) for i in range(len(VARIANTS))])
        sims = queries @ image_vectors[pool].T
        for i, v in enumerate(VARIANTS):
            top = pool[np.argsort(-sims[i], kind="stable")[:k]]
            out[f"vp@{k}/{v.key}/{light}"] = float(frames.visible_variants[top, i].mean())
    correct_all = []
    for c in range(N_KINDS):
        prompts = embed_texts(variant_prompts(c))
        sel = np.nonzero(frames.label == c)[0]
        pred = np.argmax(image_vectors[sel] @ prompts.T, axis=1)
        for v in (v for v in VARIANTS if KIND_INDEX[v.kind] == KIND_INDEX[CLASS_NAMES[c]]):
            for deep in (False, True):
                light = "deep" if deep else "shallow"
                mine = (frames.variant[sel] == v.index) & (frames.deep[sel] == deep)
                out[f"vacc/{v.key}/{light}"] = float((pred[mine] == v.index).mean()) if mine.any() else float("nan")
                out[f"vn/{v.key}/{light}"] = float(mine.sum())
        correct_all.append(pred == frames.variant[sel])
    out["vacc"] = float(np.concatenate(correct_all).mean())
    out[f"min_vp@{k}"] = min(v for key, v in out.items() if key.startswith(f"vp@{k}/"))
    out["min_vacc"] = min(v for key, v in out.items() if key.startswith("vacc/") and not np.isnan(v))
    return out


def variant_table(results: dict[str, float], k: int = 5) -> str:
    """Markdown table: one row per variant."""
    lines = [
        f"| variant | words | p@{k} shallow | p@{k} deep | acc among its kind's variants, shallow | deep | frames (shallow/deep) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for v in VARIANTS:
        lines.append(
            f"| {v.key} | {v.phrase} | {results[f'vp@{k}/{v.key}/shallow']:.2f} | {results[f'vp@{k}/{v.key}/deep']:.2f} | "
            f"{results[f'vacc/{v.key}/shallow']:.3f} | {results[f'vacc/{v.key}/deep']:.3f} | "
            f"{int(results[f'vn/{v.key}/shallow'])}/{int(results[f'vn/{v.key}/deep'])} |"
        )

    lines.append(
        f"| **all** | | min {results[f'min_vp@{k}']:.2f} | | min {results['min_vacc']:.3f} (all {results['vacc']:.3f}) | | |"
    )
    return "\n".join(lines)
