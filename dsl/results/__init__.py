"""Results: typed values and results, their views (pandas, statsmodels' names), renderers (text, JSON,
Markdown, LaTeX, HTML), comparison reports.

Layered bottom to top: ``layout`` (how a JSON value is laid out as text), ``comparison``
(the comparison document), ``values`` (the value types and their JSON form), ``render``,
``plots`` and ``comparison_tables``; then ``views`` and ``report``; ``result``
(:class:`privspec.results.result.Result`, which mixes in the views and prints as the
reports); ``kinds`` (one result class per kind, its fields by name) and ``compare_report``
on top."""
