"""embodmem-bench: a frozen, versioned benchmark whose results anyone can check.

- :mod:`embodmem.bench.spec`: the spec file of each version (tasks, worlds, sensing, scoring, tracks)
  and its content hash;
- :mod:`embodmem.bench.run`: a spec's episodes through the app's runner into one result file;
- :mod:`embodmem.bench.score`, :mod:`embodmem.bench.tracks`: the pinned scorer and the budgets;
- :mod:`embodmem.bench.verify`, :mod:`embodmem.bench.board`: checking and ranking results;
- :mod:`embodmem.bench.export`, :mod:`embodmem.bench.dataset`: the offline dataset and its reader.

docs/benchmark.md and docs/dataset.md describe them for users.
"""
