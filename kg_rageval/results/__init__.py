"""Results: the one result shape every family produces, and how it is stored.

:mod:`.evaluation` (``Evaluation``, ``EvaluationSet``, ``Metric``, roll-ups over the ontology,
bootstrap intervals, merges), :mod:`.resample` (the one bootstrap draw), :mod:`.forms`
(resampled sums), :mod:`.colstore` (spilled columns) and :mod:`.recordstore` (record ids and unscored entries as columns). Sits above the
ontology and below the families.
"""
