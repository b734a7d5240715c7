"""The frozen registry (#56 item 9, #58 item 1): runner freeze writes entry digests and the exploratory seeds'
effects once; a changed entry, a moved extractor or result, a new or removed claim is named; an altered file is
refused in one line (exit 2) before the findings notebook starts."""

from __future__ import annotations

import json

import pytest
from unlearnkit.claims import freeze
from unlearnkit.claims.judge import SeedResult
from unlearnkit.runner import main


class _Judged:
    def __init__(self, claim, effects):
        self.claim = claim
        self.per_seed = tuple(SeedResult(s, e, "consistent") for s, e in effects.items())


def _claims(**overrides):
    effects = {"a.one": {0: 0.5, 1: 0.25}, "b.two": {0: None, 1: -1.0}}
    effects.update(overrides)
    return [_Judged(cid, e) for cid, e in effects.items()]


def test_a_freeze_holds_until_an_entry_or_an_effect_moves(tmp_path):
    path = tmp_path / "claims.frozen.json"
    digests = {"a.one": "d1", "b.two": "d2"}
    document = freeze.freeze(_claims(), "abc123", [0, 1], path)
    document["entries"] = digests  # the test's own digests, re-sealed as the freeze would have written them
    document["sha256"] = freeze.content_digest(document)
    path.write_text(json.dumps(document))
    frozen = freeze.read(path)
    assert freeze.check(frozen, _claims(), digests) == {}
    moved = freeze.check(frozen, _claims(**{"a.one": {0: 0.5, 1: 0.26}}), {**digests, "b.two": "changed",
                                                                            "c.new": "d3"})
    assert set(moved) == {"a.one", "b.two", "c.new"}
    assert "exploratory seed 1 moved from 0.25 to 0.26" in moved["a.one"]
    assert "entry changed" in moved["b.two"] and "after the freeze" in moved["c.new"]
    assert "removed" in freeze.check(frozen, _claims(), {"a.one": "d1"})["b.two"]
    # a claim that becomes testable (None -> a number) on a frozen seed moved too
    assert "seed 0" in freeze.check(frozen, _claims(**{"b.two": {0: 0.1, 1: -1.0}}), digests)["b.two"]
    with pytest.raises(freeze.FreezeError, match="frozen once"):
        freeze.freeze(_claims(), "def456", [0, 1], path)


def test_an_entry_digest_ignores_its_amendments_and_nothing_else(tmp_path):
    base = {"claims": [{"id": "x.y", "quote": "q", "amended": [{"why": "a"}]}]}
    path = tmp_path / "claims.yaml"
    path.write_text(json.dumps(base))  # JSON is YAML
    first = freeze.entry_digests(path)
    base["claims"][0]["amended"].append({"why": "b"})
    path.write_text(json.dumps(base))
    assert freeze.entry_digests(path) == first
    base["claims"][0]["quote"] = "q2"
    path.write_text(json.dumps(base))
    assert freeze.entry_digests(path) != first


def test_an_altered_frozen_registry_is_refused_in_one_line_before_the_findings_notebook(tmp_path, monkeypatch, capsys):
    path = tmp_path / "claims.frozen.json"
    freeze.freeze(_claims(), "abc123", [0, 1], path)
    document = json.loads(path.read_text())
    document["effects"]["a.one"]["1"] = 0.9  # a hand edit of a frozen effect
    path.write_text(json.dumps(document))
    with pytest.raises(freeze.FreezeError, match="altered"):
        freeze.read(path)
    monkeypatch.setattr(freeze, "FROZEN", path)
    _refused(["aggregate", "--profile", "default"])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "altered after the freeze" in err[0]
    path.write_text("{not json")
    _refused(["aggregate", "--profile", "default"])
    assert "cannot be read" in capsys.readouterr().err
    assert freeze.read(tmp_path / "absent.json") is None


def test_freeze_is_refused_on_another_profile_and_when_the_file_exists(tmp_path, monkeypatch, capsys):
    _refused(["freeze", "--profile", "smoke"])
    path = tmp_path / "claims.frozen.json"
    path.write_text("{}")
    monkeypatch.setattr(freeze, "FROZEN", path)
    _refused(["freeze"])
    assert "frozen once" in capsys.readouterr().err


def _refused(argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
