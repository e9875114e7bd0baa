"""WordNet 3.0 for NLTK reference tests, from Debian's ``wordnet-base`` package (no download).

Layout expected: a WordNet database directory holding ``data.noun``, ``index.noun``, ... — by
default ``/usr/share/wordnet`` (where ``apt-get install wordnet-base`` puts it), or the
directory named by the environment variable ``KG_RAGEVAL_WORDNET_DIR``. NLTK's reader also
needs a ``lexnames`` file, which Debian leaves out; :func:`nltk_wordnet` builds a private copy
of the directory (file copies, ~35 MB in a temporary directory) with a generated ``lexnames`` (:func:`write_lexnames`).
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

DEFAULT_DIR = "/usr/share/wordnet"
ENV_VAR = "KG_RAGEVAL_WORDNET_DIR"

# The 45 lexicographer files of WordNet 3.0, as listed by ``man 5 lexnames``
# (number, name, syntactic category: 1 noun, 2 verb, 3 adjective, 4 adverb).
LEXNAMES = [
    "adj.all",
    "adj.pert",
    "adv.all",
    "noun.Tops",
    "noun.act",
    "noun.animal",
    "noun.artifact",
    "noun.attribute",
    "noun.body",
    "noun.cognition",
    "noun.communication",
    "noun.event",
    "noun.feeling",
    "noun.food",
    "noun.group",
    "noun.location",
    "noun.motive",
    "noun.object",
    "noun.person",
    "noun.phenomenon",
    "noun.plant",
    "noun.possession",
    "noun.process",
    "noun.quantity",
    "noun.relation",
    "noun.shape",
    "noun.state",
    "noun.substance",
    "noun.time",
    "verb.body",
    "verb.change",
    "verb.cognition",
    "verb.communication",
    "verb.competition",
    "verb.consumption",
    "verb.contact",
    "verb.creation",
    "verb.emotion",
    "verb.motion",
    "verb.perception",
    "verb.possession",
    "verb.social",
    "verb.stative",
    "verb.weather",
    "adj.ppl",
]
_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}


def wordnet_dir() -> Path | None:
    """The WordNet database directory, or None when it is absent."""
    d = Path(os.environ.get(ENV_VAR, DEFAULT_DIR))
    if (d / "data.noun").is_file() and (d / "index.noun").is_file():
        return d
    return None


def lexnames_text() -> str:
    """``lexnames`` content: ``NN<TAB>name<TAB>category`` per line."""
    return "".join(f"{k:02d}\t{name}\t{_CATEGORY[name.split('.')[0]]}\n" for k, name in enumerate(LEXNAMES))


def write_lexnames(path: Path) -> None:
    path.write_text(lexnames_text(), encoding="ascii")


def nltk_wordnet(source: Path, workdir: Path):
    """An NLTK ``WordNetCorpusReader`` over ``source`` (a copy of links plus ``lexnames``)."""
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    workdir.mkdir(parents=True, exist_ok=True)
    if (source / "lexnames").is_file():  # a complete NLTK-style directory: use it as it is
        workdir = source
    for f in source.iterdir():  # copies: NLTK refuses symlinks that leave its corpus root
        target = workdir / f.name
        if f.is_file() and not target.exists():
            shutil.copyfile(f, target)
    if not (workdir / "lexnames").exists():
        write_lexnames(workdir / "lexnames")
    # NLTK >= 3.9 reads corpora only from authorised directories (nltk.data.path)
    for d in (str(workdir), str(source.resolve())):
        if d not in nltk.data.path:
            nltk.data.path.append(d)

    class Reader(WordNetCorpusReader):
        def map_wn(self, version="wordnet"):
            # only the multilingual (OMW) functions use this map, and building it reads
            # nltk_data's own copy of WordNet: not needed for the hypernym graph
            return None

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The multilingual functions")
        return Reader(str(workdir), None)


def noun_ontology(wn):
    """WordNet's noun hierarchy as an Ontology: ids are synset names (``dog.n.01``), parents
    are hypernyms plus instance hypernyms (what NLTK's Wu-Palmer follows)."""
    from kg_rageval.ontology import OntologyBuilder

    b = OntologyBuilder("wordnet-3.0-nouns")
    synsets = list(wn.all_synsets("n"))
    for s in synsets:
        b.add_node(s.name(), label=s.lemma_names()[0])
    for s in synsets:
        for h in s.hypernyms() + s.instance_hypernyms():
            b.add_edge(s.name(), h.name())
    return b.build(), synsets
