"""The quote registry (docs/claims.yaml): well formed, and the quotes of the
papers in ../shared/papers are verbatim there (skipped with its reason where that folder is absent)."""

import copy
import shutil

import pytest
import yaml
from conftest import needs
from unlearnkit import paths, runs
from unlearnkit.claims import registry


@pytest.fixture(scope="module")
def raw():
    return yaml.safe_load(paths.CLAIMS.read_text(encoding="utf-8"))


def test_the_committed_registry_is_well_formed_and_names_known_notebooks():
    reg = registry.read()
    assert reg.schema_version == registry.SCHEMA_VERSION and len(reg.claims) >= 30
    notebooks = {runs.DATA_TOUR, runs.FINETUNE, runs.UNLEARNING, runs.CONTROLS, runs.FORMATS, runs.LEAKAGE,
                 runs.ENTROPY, runs.ALIGNMENT, runs.ROBUSTNESS, runs.METRIC_TRUST}
    for c in reg.claims:
        assert c.notebook in notebooks, c.id
        assert c.minimal_reason.strip() and c.quantity.strip(), c.id
        # a finding carries its quote or says why it cannot; the seed papers' quotes name the file they come from
        assert c.quote or c.status or c.kind == registry.SETUP_CHECK, c.id
        if c.quote and c.paper.file:
            assert c.paper.sha256 and len(c.paper.sha256) == 64
        if c.quote and not c.paper.file:
            assert c.quote_seen_at, f"{c.id}: a quote from a paper not in ../shared/papers says where it was read"
    assert sum(c.counted for c in reg.claims) >= 25


@needs(paths.PAPERS.is_dir(), "the papers' full texts are not in ../shared/papers (or UNLEARNKIT_PAPERS): the verbatim "
       "check needs them", "CI, whose clone has ../shared beside it")
def test_the_seed_papers_quotes_are_verbatim_in_their_files():
    assert registry.quote_problems(registry.load()) == []


@needs(paths.PAPERS.is_dir(), "the papers' full texts are not in ../shared/papers (or UNLEARNKIT_PAPERS)",
       "CI, whose clone has ../shared beside it")
def test_the_quote_check_catches_an_edited_quote_and_a_changed_file(tmp_path, raw):
    reg = registry.load()
    for paper in reg.papers.values():
        if paper.file:
            shutil.copy(paths.PAPERS / paper.file, tmp_path / paper.file)
    assert registry.quote_problems(reg, tmp_path) == []
    edited = copy.deepcopy(raw)
    first = next(c for c in edited["claims"] if c["paper"] == "wang" and c.get("quote"))
    first["quote"] = first["quote"].replace("GA", "G A", 1)
    assert [p for p in registry.quote_problems(registry.parse(edited), tmp_path) if first["id"] in p]
    wang = tmp_path / reg.papers["wang"].file
    wang.write_text(wang.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert any("sha256" in p for p in registry.quote_problems(reg, tmp_path))
    wang.unlink()
    assert any("is not in" in p for p in registry.quote_problems(reg, tmp_path))


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["claims"].append(copy.deepcopy(d["claims"][1])), "registered twice"),
    (lambda d: d["claims"][1].update(paper="nobody"), "not one of the registry's papers"),
    (lambda d: d["claims"][1]["effect"].update(side="up"), "effect side 'up'"),
    (lambda d: d["claims"][1].update(quote=None), "no quote, no finding"),
    (lambda d: d["claims"][1]["minimal_effect"].update(reason=""), "needs a value and its reason"),
    (lambda d: d["claims"][1]["minimal_effect"].update(value=-1), "negative"),
    (lambda d: d["claims"][1]["minimal_effect"].update(value=0), "minimal_effect value 0: every seed would be a coin"),
    (lambda d: d.update(schema_version=0), "schema_version"),
    (lambda d: d["claims"][1].update(amended=[{"date": "2026-11-27", "before": "x", "why": "y"}]), "says what was known"),
    (lambda d: d["claims"][1]["effect"].pop("range"), "needs its range"),
    (lambda d: d["claims"][1]["effect"].update(range=[None, 0.5]), "cannot come out inconsistent"),
    (lambda d: d["claims"][1]["effect"].update(range=[-0.5, None]), "cannot come out consistent"),
    (lambda d: d["claims"][1]["effect"].update(range=[1, 2]), "lies outside its range"),
    (lambda d: d["claims"][1]["effect"].update(range=[2, -2]), "lo must be below hi"),
    (lambda d: d["claims"][1]["effect"].update(range=[None, "x"]), "must be a number"),
    (lambda d: d["claims"][1]["effect"].update(scale="share of questions"), "is bounded"),
])
def test_a_malformed_registry_is_refused_in_one_line(raw, edit, message):
    data = copy.deepcopy(raw)
    data["claims"][1].pop("status", None)
    edit(data)
    with pytest.raises(registry.RegistryError, match=message) as e:
        registry.parse(data)
    assert "\n" not in str(e.value)


def test_a_registry_that_is_not_yaml_is_refused_in_one_line(tmp_path):
    bad = tmp_path / "claims.yaml"
    bad.write_text("claims: [unclosed\n", encoding="utf-8")
    with pytest.raises(registry.RegistryError, match="not valid YAML") as e:
        registry.read(bad)
    assert "\n" not in str(e.value)


def test_a_share_tested_against_zero_is_refused_as_a_claim_that_cannot_fail(raw):
    """scholten.greedy_understates as first registered (a share >= 0, no effect 0, minimal effect 0.19) could never
    come out inconsistent: the registry refuses it now, and its amendment says what was known."""
    data = copy.deepcopy(raw)
    entry = next(c for c in data["claims"] if c["id"] == "scholten.greedy_understates")
    assert entry["amended"] and "0.048" in entry["amended"][-1]["known"]
    entry["effect"]["no_effect"], entry["minimal_effect"]["value"] = 0.0, 0.19
    with pytest.raises(registry.RegistryError, match="greedy_understates.*cannot come out inconsistent"):
        registry.parse(data)


def test_every_entry_states_its_range_and_can_come_out_either_way():
    """For every entry, a seed effect within its range that the judge rates consistent and one it rates inconsistent
    (the range's ends, or a unit beyond the minimal effect where an end is open). This reads the registry's numbers
    with the judge; tests/test_claims_can_fail.py builds them through each entry's own extractor."""
    from unlearnkit.claims import judge

    for c in registry.load().claims:
        low, high = c.range
        assert (low is None or low <= c.null) and (high is None or c.null <= high), c.id
        beyond = c.minimal_effect + 1
        candidates = [c.null - beyond if low is None else low, c.null + beyond if high is None else high]
        outcomes = {judge.seed_result(0, x, c.side, c.null, c.minimal_effect).outcome for x in candidates}
        assert outcomes == {judge.CONSISTENT, judge.INCONSISTENT}, (c.id, c.range, outcomes)
