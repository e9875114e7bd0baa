"""Cleaning evaluation (issue #30, *Cleaning*), work in progress: Unicode health
(:mod:`.unicode`) and the MinHash/LSH reference near-duplicate detector (:mod:`.minhash`).
The scoring family itself is not built yet."""
