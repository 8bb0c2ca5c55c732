"""Embodied question answering from memory: ask the robot what it saw on a tour.

A *tour* is a recorded walk through one world (its actions); the *questions* about it are generated
from what entered the robot's camera on that walk (never from what the world merely holds); an
*answerer* watches the replayed tour through the observations only and then answers. Modules:
``config`` (the ``experiment.eqa`` settings), ``files`` (the types and the versioned JSONL file),
``tour`` (walk, replay, ground truth), ``questions`` (generation, balance), ``answerers`` (one
interface, the baselines), ``vlm`` (the VLM answerer), ``scoring`` (exact scores, metres for
"where", accuracies with CIs), ``run`` (tours x answerers -> records), ``experiment`` (the
``experiment=eqa`` run mode). The questions about a world that changes between tasks:
``changing`` (visits, their changes and ground truth, the questions), ``changing_answerers`` (the
stock answerers reading time), ``changing_run`` (visits x answerers -> records, the report; the
``experiment=eqa_changing`` mode). docs/eqa.md describes the protocol and the file.
"""
