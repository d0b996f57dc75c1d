"""Collecting reports where the answers are: the randomizer that runs on the
respondent's device (:mod:`privspec.backends.collect.randomizer`)."""
