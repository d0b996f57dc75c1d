"""The model: names resolved and validated (AST -> model graph): scope, resolution, mechanisms, queries,
compare blocks, call signatures, query kinds, costs and limits."""
