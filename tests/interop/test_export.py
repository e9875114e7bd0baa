"""Round trip: RAGAS rows -> records -> generation scored -> Parquet and a RAGAS table."""

from pathlib import Path

import pytest

from kg_rageval.interop.export import ragas_table, write_parquet
from kg_rageval.interop.ragas import read

ROOT = Path(__file__).resolve().parents[2]
VEHICLES = ROOT / "fixtures" / "generation" / "vehicles.csv"
RAGAS = ROOT / "fixtures" / "interop" / "ragas.jsonl"


def test_round_trip_to_a_ragas_table(tmp_path):
    pytest.importorskip("pyarrow", reason="the parquet extra")
    import pyarrow.parquet as pq

    from kg_rageval.ontology import load_ontology
    from kg_rageval.scoring import REGISTRY

    recs = read(RAGAS).records
    result = REGISTRY["generation"].score(load_ontology(VEHICLES), recs)
    table = ragas_table(recs, result).to_pylist()
    assert [r["id"] for r in table] == [r["id"] for r in recs]
    first = table[0]
    assert first["user_input"] == "Which technique covers dumping LSASS memory?"
    assert first["response"] == "LSASS Memory (T1003.001)." and first["reference"] == "LSASS Memory"
    assert first["reference_contexts"] == [
        "T1003.001 LSASS Memory is a sub-technique of OS Credential Dumping."
    ]
    assert (
        first["retrieved_contexts"][0] == "Adversaries may access LSASS process memory to obtain credentials."
    )
    # "LSASS Memory (T1003.001)." is not the reference "LSASS Memory" word for word
    assert first["generation.exact_match"] == 0.0
    paths = write_parquet(result, tmp_path / "pq")
    corr = pq.read_table(tmp_path / "pq" / "generation.correctness.parquet")
    assert corr.column("record_id").to_pylist()[0] == recs[0]["id"]
    assert all(p.exists() for p in paths)


def test_score_generation_writes_parquet_and_a_ragas_table(tmp_path, capsys):
    """``score generation --parquet DIR --ragas-table FILE`` on imported RAGAS rows: the table's
    per-record metric is the library's, side by side with RAGAS's columns."""
    pytest.importorskip("pyarrow", reason="the parquet extra")
    import json

    import pyarrow.parquet as pq

    from kg_rageval.cli.main import main

    recs = tmp_path / "recs.jsonl"
    assert main(["import", "ragas", str(RAGAS), "-o", str(recs)]) == 0
    table, pqdir = tmp_path / "side.parquet", tmp_path / "pq"
    args = ["score", "generation", "--ontology", str(VEHICLES), "-d", str(recs)]
    assert main([*args, "--parquet", str(pqdir), "--ragas-table", str(table), "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("{") :])["written"] == {"parquet": str(pqdir), "ragas_table": str(table)}
    got = pq.read_table(table).to_pylist()
    want = ragas_table(read(RAGAS).records, _lib_score(read(RAGAS).records)).to_pylist()
    assert got == want
    assert got[0]["user_input"] == "Which technique covers dumping LSASS memory?"
    assert got[0]["generation.exact_match"] == 0.0
    assert (pqdir / "generation.correctness.parquet").exists()
    csv_path = tmp_path / "side.csv"
    assert main([*args, "--ragas-table", str(csv_path)]) == 0
    assert (
        csv_path.read_text().splitlines()[0].startswith("id,user_input,retrieved_contexts,response,reference")
    )
    capsys.readouterr()
    assert main([*args, "--ragas-table", str(recs)]) == 2  # never over the data file
    assert "--ragas-table" in capsys.readouterr().err


def _lib_score(recs):
    from kg_rageval.ontology import load_ontology
    from kg_rageval.scoring import REGISTRY

    return REGISTRY["generation"].score(load_ontology(VEHICLES), recs)
