"""Embodied question answering from memory: ask the robot what it saw on a tour.

A *tour* is a recorded walk through one world (its actions); the *questions* about it are generated
from what entered the robot's camera on that walk (never from what the world merely holds); an
*answerer* watches the replayed tour through the observations only and then answers. Modules:
``tour`` (walk, replay, ground truth), ``questions`` (types, generation, balance, the JSONL file),
``answerers`` (one interface, six answerers), ``vlm`` (the VLM answerer), ``scoring`` (exact scores,
metres for "where", accuracies with CIs), ``run`` (tours x answerers -> records).
"""
