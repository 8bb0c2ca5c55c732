"""A worked example of embodmem plug-ins: :class:`~my_memory.memory.RecencyMemory` (a memory design)
and :func:`~my_memory.policy.make_agent` (a scripted policy)."""
