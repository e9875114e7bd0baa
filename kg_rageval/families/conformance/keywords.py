"""JSON Schema vendor keywords of the derived schemas (shared by :mod:`.schema` and the
compiled checker :mod:`.fastcheck`, which therefore do not import each other)."""

VOCAB_KEYWORD = "x-kg-rageval-vocabulary"
VOCABS_KEYWORD = "x-kg-rageval-vocabularies"
