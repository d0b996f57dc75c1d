"""Finite mechanisms (subset privacy, randomized response matrices, products): analysis, estimation,
simulation, independence tests."""
