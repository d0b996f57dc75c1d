"""The NPMLE of a distribution function from interval data: data, solver, result, bands."""
