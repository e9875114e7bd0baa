"""The one config-error wording (kg_rageval.base.validation) the alert config and the audit config share."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from kg_rageval.base.errors import ConfigError
from kg_rageval.base.validation import fields_at, validation_lines


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max: float


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    latency: Inner | None = None
    name: str


def test_lines_unknown_missing_and_did_you_mean():
    with pytest.raises(ValidationError) as exc:
        Outer.model_validate({"latency": {"maxx": 1}, "nmae": "x"})
    lines = validation_lines(exc.value.errors(), model=Outer)
    assert lines == [
        "latency.max: required key is missing",
        "latency.maxx: unknown key (did you mean 'max'?)",
        "name: required key is missing",
        "nmae: unknown key (did you mean 'name'?)",
    ]
    assert (
        validation_lines(exc.value.errors(), unknown="unknown key (see docs)")[1]
        == "latency.maxx: unknown key (see docs)"
    )
    assert fields_at(Outer, ("latency", "x")) == ["max"] and fields_at(Outer, ("name", "x")) == []


def test_alert_and_audit_configs_read_the_same():
    from kg_rageval.audit.config import config_from_mapping as audit_config
    from kg_rageval.monitor.alerts import config_from_mapping as alert_config

    with pytest.raises(ConfigError, match=r"faithfulness\.min: required key is missing"):
        alert_config({"faithfulness": {}})
    with pytest.raises(ConfigError, match=r"bogus: unknown key \(see docs/audit.md for the allowed keys\)"):
        audit_config({"bogus": 1})
