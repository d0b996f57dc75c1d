"""Local-DP frequency oracles: single attribute, several attributes, longitudinal."""
