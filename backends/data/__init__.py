"""The data layer: reading files, binding them to mechanisms, the tally (counts per distinct report) and
the engines that compute it (pandas, DuckDB, Spark), atomic output files."""
