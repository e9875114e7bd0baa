"""The ground floor: what every other layer may use and nothing here depends on.

Errors and exit codes (:mod:`.errors`), input limits (:mod:`.limits`), bounded readers
(:mod:`.safe_io`), string-named imports (:mod:`.imports`), file hashes (:mod:`.hashing`), number formats and text tables
(:mod:`.fmt`), secret redaction (:mod:`.redact`), spooled text and heap trimming
(:mod:`.spool`, :mod:`.memory`) and the bundled resources (:mod:`.resources`). Standard library
only at import time; nothing here imports another floor of :mod:`kg_rageval`.
"""
