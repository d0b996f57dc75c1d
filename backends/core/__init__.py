"""The shared core of every finite mechanism: the channel, mechanisms compiled to channels, the estimators
on counts, implicit Kronecker products, populations, per-row randomness."""
