"""Production monitoring per ontology branch (issue #29, the seed article's Part 10): traffic
read into time windows kept in an embedded store, query / branch-mix / new-concept / embedding
and performance drift, review queues with inclusion probabilities, sampled FER, implicit
signals as candidates, guardrail alerts, shadow runs. A floor above ``testset`` (reviewed
items flow into golden sets) and below ``demo``.
"""
