"""Claims as code: a study's findings declared in the config (`claims:`), each decided with
the statistics module's intervals and reported as supported / refuted / inconclusive.

Modules: grid (the arms a config shows, those an edit of its grid could show, and the
selectors naming them), spec (parse the claims against the grid into members; both standard
library only, the Snakefile checks claims at parse time), data (per-query scores and
latency calls from a results folder), decide (estimates, tests, Holm, verdicts), render
(claims.md) and forest (the forest plot), both reading the decided table with table.
`python -m workflow_scripts.claims --config X --results DIR` decides the claims of a config
on an existing results folder.
docs/claims.md has the language and the decision rules.
"""

VERDICTS = ("supported", "refuted", "inconclusive", "not-applicable")
