"""kg-rageval: ontology-centric evaluation of knowledge-graph RAG systems."""

__version__ = "0.1.0"
