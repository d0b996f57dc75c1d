"""Design comparisons and planning: criteria, rankings, frontiers, sample sizes, power.

``planning`` (sample sizes and power from plain numbers) and ``criteria`` (the registry of
comparison criteria and their evaluation for one candidate) at the bottom, ``inverse``
(free parameters solved for) above them, ``comparison`` (the document and the back end) on top."""
