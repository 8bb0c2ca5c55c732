"""The hand cases of the metric definitions, computed by the library (docs/metrics.md).

python tools/metric_cases.py
"""

from __future__ import annotations

import numpy as np

from embodmem.metrics import distance_score, position_score
from embodmem.transfer import backward_transfer, forward_transfer


def main() -> None:
    R = np.array([[0, 0.1, 0.2], [0.9, 0.5, 0.3], [0.8, 0.9, 0.6], [0.7, 0.8, 0.9]])
    cold = [0.1, 0.2, 0.3]
    rows = [
        ("distance score, instances at 10, 40, 70, 200 m", position_score([10.0, 40.0, 70.0, 200.0])),
        ("distance score, no distance logged", distance_score([])),
        ("passed within 5 m, reported, ended 120 m away: final position only", position_score([120.0])),
        (
            "passed within 5 m, reported, ended 120 m away: reference (best of final and reports)",
            distance_score([120.0], [[40.0], [5.0], [25.0]]),
        ),
        ("GEM FWT, row-0 baseline, paper averaging (T-1)", forward_transfer(R)),
        ("GEM BWT, paper averaging", backward_transfer(R)),
        ("GEM FWT, GEM code averaging (T)", forward_transfer(R, averaging="code")),
        ("GEM BWT, GEM code averaging", backward_transfer(R, averaging="code")),
        ("FWT vs cold (cold means as baseline)", forward_transfer(R, cold)),
    ]
    print("| case | value |\n|---|---:|")
    for name, value in rows:
        print(f"| {name} | {value:.2f} |")


if __name__ == "__main__":
    main()
