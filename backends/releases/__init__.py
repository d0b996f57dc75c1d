"""Releases: count tables epsilon-private on a subset of variables, budgets, noise."""
