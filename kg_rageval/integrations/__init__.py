"""Integrations with the systems around an evaluation: graph databases over Bolt
(:mod:`.neo4j_writer`, with the loader in :mod:`kg_rageval.ontology.loaders.neo4j`), Dask
(:mod:`.dask`) and pytest (:mod:`kg_rageval.pytest_plugin`).

Each submodule imports its third-party library only when used.
"""
