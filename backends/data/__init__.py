"""The data layer: reading files (:mod:`.files`; the CSV cell conventions and the
spreadsheet guard in :mod:`.csv_cells`), the checks every engine makes alike
(:mod:`.checks`), binding files to mechanisms (:mod:`.bindings`), the tally (counts per
distinct report, :mod:`.tally`) and the engines that compute it (:mod:`.engines`: pandas,
DuckDB, Spark), and data tables written atomically (:mod:`.writing`)."""
