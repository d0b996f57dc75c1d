"""Results: typed values and results, their views (pandas, statsmodels' names), renderers (text, JSON,
Markdown, LaTeX, HTML), comparison reports."""
