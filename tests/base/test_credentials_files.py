"""A credentials file given as an input is refused before it is read (issue #28: a .env loaded
as an ontology table printed ``OPENAI_API_KEY=sk-...`` as a root node)."""

from __future__ import annotations

import json

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.base.safe_io import refuse_credentials_file

SECRET = "sk-live-abcdef1234567890"


@pytest.fixture()
def dotenv(tmp_path):
    p = tmp_path / ".env"
    p.write_text(f"OPENAI_API_KEY={SECRET}\nDB_PASSWORD=hunter2hunter2\n")
    return p


@pytest.mark.parametrize(
    "name",
    [
        ".env",
        ".env.local",
        "prod.env",
        ".netrc",
        ".pgpass",
        ".git-credentials",
        "id_ed25519",
        "tls.pem",
        ".env.gz",
    ],
)
def test_credential_names_are_refused(tmp_path, name):
    with pytest.raises(InputError, match="named like a credentials file"):
        refuse_credentials_file(tmp_path / name)


@pytest.mark.parametrize("name", ["environment.tsv", "env.csv", "records.jsonl", "envelope.json"])
def test_ordinary_names_pass(tmp_path, name):
    refuse_credentials_file(tmp_path / name)


def test_ontology_inspect_of_a_dotenv_prints_no_secret(dotenv, cli):
    code, out, err = cli(
        ["ontology", "inspect", str(dotenv), "--ontology-format", "table", "--format", "json"]
    )
    assert code == 2 and "named like a credentials file" in err  # before: exit 0, the key as a root
    assert SECRET not in out + err and "hunter2" not in out + err


def test_audit_with_a_dotenv_as_records_or_ontology_prints_no_secret(dotenv, tmp_path, cli, fixtures_dir):
    (tmp_path / "vehicles.csv").write_bytes((fixtures_dir / "audit" / "vehicles.csv").read_bytes())
    (tmp_path / "r.jsonl").write_text(
        json.dumps({"id": "a", "labels": {"gold": ["sedan"], "pred": ["sedan"]}}) + "\n"
    )
    for onto, recs in (("vehicles.csv", ".env"), ({"path": ".env", "format": "table"}, "r.jsonl")):
        cfg = tmp_path / "a.json"
        cfg.write_text(json.dumps({"ontology": onto, "records": recs, "families": {"hierarchy": {}}}))
        code, out, err = cli(["audit", "-c", str(cfg), "--out", str(tmp_path / "out"), "-q"])
        assert code == 2 and "named like a credentials file" in err
        assert SECRET not in out + err and not (tmp_path / "out" / "report.json").exists()
