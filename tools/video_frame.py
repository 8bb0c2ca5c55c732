"""One frame of an episode video as a PNG: how the README's picture (docs/assets/replay-frame.png) is made.

    embodmem-run video=on hydra.run.dir=/tmp/video-run
    python tools/video_frame.py "/tmp/video-run/videos/seq=wreck_then_barrel-world=1001-seed=0-task=2-agent=memory-cond=warm-success=1-spl=0.94.mp4" \
        --frame 20 --out docs/assets/replay-frame.png
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import av

from embodmem.atomic import atomic_write_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("video", type=Path)
    parser.add_argument("--frame", type=int, default=20, help="frame index (0 = the first)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if not args.video.is_file():
        sys.exit(f"video: {str(args.video)!r}: no such file")
    with av.open(str(args.video)) as container:
        for index, frame in enumerate(container.decode(video=0)):
            if index == args.frame:
                buffer = io.BytesIO()
                frame.to_image().save(buffer, format="PNG", optimize=True)
                atomic_write_bytes(args.out, buffer.getvalue())
                print(f"{args.out}: frame {index}")
                return
    sys.exit(f"--frame={args.frame}: the video has {index + 1} frames; allowed: 0-{index}")


if __name__ == "__main__":
    main()
