"""Numeric attributes under local DP: Laplace, Duchi, piecewise, hybrid and square-wave mechanisms on a bounded continuous variable."""
