"""Results: the one result shape every family produces, and how it is stored.

:mod:`.metric` (``Metric``, ``ratio``, ``harmonic``), :mod:`.family` (``Family``),
:mod:`.evaluation` (``Evaluation``: sums, breakdowns, roll-ups, bootstrap intervals, merges),
:mod:`.builders` (an evaluation from rows or columns), :mod:`.evaluation_set`
(``EvaluationSet``), :mod:`.columns` (how an evaluation stores its columns), :mod:`.rollup`
(subtree sums along the ontology), :mod:`.bootstrap` (the resampling weights), :mod:`.resample`
(the one bootstrap draw),
:mod:`.record_stats` (per-record sums), :mod:`.concatenation` (streamed partitions),
:mod:`.forms` (resampled sums), :mod:`.colstore` (spilled columns), :mod:`.recordstore` (record
ids and unscored entries as columns), :mod:`.jsonsafe` and :mod:`.frames` (output). Sits above
the ontology and below the families.
"""
