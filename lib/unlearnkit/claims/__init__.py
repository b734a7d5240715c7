"""The one judging system: every claim the workbook tests, from its quoted sentence to the rows a reader sees.

registry -> extractors -> judge -> summary -> render:

- :mod:`.registry`: the quote registry ``docs/claims.yaml`` (each claim's verbatim sentence, its effect quantity on the
  paper's scale, side, no-effect value, minimal effect, range and preconditions), read as data and checked;
- :mod:`.extractors`: one seed's effect of each claim, read from that seed's stored results (one module per notebook the
  claims read), and the claims judged over seeds (``extractors.judge_claims``);
- :mod:`.judge`: one seed's outcome among four and the rule over seeds (Clopper-Pearson), with the effect's t-interval,
  the sign test and the lean;
- :mod:`.summary`: each claim joined with its verdict as the summary (docs/findings.json) stores it;
- :mod:`.render`: those records as text: the README's table, notebook 10's and docs/results.md's;
- :mod:`.freeze`: docs/claims.frozen.json, written once by ``runner freeze`` and checked at every aggregate.

Nothing here trains or samples; a change to a claim's reading needs ``runner aggregate``, no rerun. The face imports
no sub-module: import the one you need (``from unlearnkit.claims import judge, registry``).
"""
