"""Data users already have, in and out (issue #32): readers of RAGAS, DeepEval, Hugging Face
``datasets``, TREC RAG, BEIR and Phoenix/OpenInference files into kg-rageval records, the join
onto a golden set, and exports (Parquet, a RAGAS-compatible table, MLflow). A floor above
``integrations`` and below ``audit``, so the audit config can name the same readers.
"""
