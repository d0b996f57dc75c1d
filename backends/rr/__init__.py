"""Multi-dimensional randomized response (the castell paper): joint estimation, bounds, simulation."""
