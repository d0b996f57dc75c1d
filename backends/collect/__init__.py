"""Collecting reports where the answers are: the randomizer that runs on the
respondent's device (:mod:`.randomizer`, an ES module generated from the spec), the
store that keeps every acknowledged submission (:mod:`.store`: SQLite by default,
PostgreSQL for a ``postgresql://`` URL; append-only, tied to the design of one spec)
and the checks a submission passes before it is stored (:mod:`.store_checks`: the same
readers, and so the same D-codes, as ``privspec run`` on a data file)."""
