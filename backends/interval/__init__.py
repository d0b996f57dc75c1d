"""Interval privacy: mechanisms, reports, coverage, estimators, regression, simulation."""
