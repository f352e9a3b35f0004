"""Cross-cutting behaviour around any backend, never code inside one: ``retry``, ``ratelimit``,
``metering`` (cost, budgets, the call cache), ``replay`` (answers from recorded calls) and
``cpu_slots`` (machine-wide CPU slots for in-process models).
"""
