"""Design comparisons and planning: criteria, rankings, frontiers, sample sizes, power."""
