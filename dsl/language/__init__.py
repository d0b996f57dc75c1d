"""The language: source text and spans, the abstract syntax tree, exact arithmetic, the parser (text -> AST)."""
