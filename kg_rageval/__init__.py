"""kg-rageval: ontology-centric evaluation of knowledge-graph RAG systems."""

__version__ = "0.2.0"
