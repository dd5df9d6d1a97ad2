from pathlib import Path

from edm_ars.data.layout import load_layout, parse_layout
from edm_ars.data.registry import (
    is_excluded,
    is_protected,
    is_sentinel,
    is_temporally_valid,
    outcomes,
    sentinels,
    wave_of,
)

ROOT = Path(__file__).resolve().parents[2]


def test_tier1_counts(reg):
    # 116 transcribed from the codebook facts and dropout_derived, plus the causal validation question's
    # treatment S1MTUTOR (a predictor) and outcome X2TXMSCR
    assert len(reg.tier1) == 119
    assert len(outcomes(reg)) == 22
    assert reg.tier1["S1MTUTOR"]["role"] == "predictor" and reg.tier1["X2TXMSCR"]["role"] == "outcome"


def test_wave_of_curated_and_prefix(reg):
    assert wave_of(reg, "X1TXMTSCOR") == "base_year"
    assert wave_of(reg, "X4EVRATNDCLG") == "update_panel"
    assert wave_of(reg, "dropout_derived") == "update_panel"  # curated wave, no prefix
    assert wave_of(reg, "S2SOMETHING") == "first_follow_up"  # inferred from the prefix
    assert wave_of(reg, "P5ANYTHING") == "postsecondary_records"
    assert wave_of(reg, "ZZUNKNOWN") is None


def test_temporal_order_is_strict(reg):
    assert is_temporally_valid(reg, "X1TXMTSCOR", "X2TXMTSCOR")
    assert is_temporally_valid(reg, "X2TXMTH", "X3TGPAMAT")  # X2 predictor for an X3 outcome is fine
    assert not is_temporally_valid(reg, "X2TXMTH", "X2TXMTSCOR")  # same wave is leakage
    assert not is_temporally_valid(reg, "X3TCREDMAT", "X3TGPAMAT")  # same wave transcript proxy
    assert not is_temporally_valid(reg, "X4EVRAPPCLG", "X4EVRATNDCLG")
    assert not is_temporally_valid(reg, "X5PS1SEC", "X4EVRATNDCLG")  # reversed time
    assert not is_temporally_valid(reg, "ZZUNKNOWN", "X4EVRATNDCLG")  # unknown wave is never valid


def test_tier3_patterns_and_curated_override(reg):
    assert is_excluded(reg, "W1STUDENT")
    assert is_excluded(reg, "W1STUDENT001")
    assert is_excluded(reg, "BRR12")
    assert is_excluded(reg, "X1SEX_IM")
    assert is_excluded(reg, "X2PROC_FLG")
    assert not is_excluded(reg, "X5DUALFLG")  # a dual-enrollment indicator, not a processing flag
    assert is_excluded(reg, "STU_ID")
    assert is_excluded(reg, "psu")  # exact names compare upper-cased
    assert is_excluded(reg, "X9SOMEFLAG")  # FLAG$ pattern
    assert not is_excluded(reg, "X1IEPFLAG")  # curated Tier 1 wins over FLAG$
    assert not is_excluded(reg, "X1SES_U")
    assert not is_excluded(reg, "X2MTHINT_R")
    assert is_excluded(reg, "X1FOO_I")
    assert is_excluded(reg, "S1ITEM", category="interviewer_variable")


def test_protected(reg):
    assert is_protected(reg, "X1SEX") and is_protected(reg, "X1RACE") and is_protected(reg, "X1SESQ5")
    assert not is_protected(reg, "X1TXMTSCOR")


def test_sentinels_numeric_and_text(reg):
    codes, labels = sentinels(reg)
    assert {-1.0, -4.0, -5.0, -6.0, -7.0, -8.0, -9.0} <= codes
    for value in (-9, -8.0, -7, -6, -5, -4, -1, "-9", " -8 ", "Missing", "Unit non-response", "Don't know",
                  "Data suppressed", "Component not applicable", "Item legitimate skip/NA", "Nonrespondent"):
        assert is_sentinel(reg, value), value
    for value in (0, 1, 3.5, "Yes", "Male", "-2", float("nan")):
        assert not is_sentinel(reg, value), value
    assert "Missing" in labels


def test_layout_parser_reads_names_labels_and_codes():
    text = (
        "/* Variable Names, Locations, and Descriptions */\r\n"
        "STU_ID         1-6           Student ID\r\n"
        "X1PAR1OCC_STEM1503-505       X1 Parent 1: STEM code\r\n"
        "/* Variable Value Labels */\r\n"
        "X1SEX\r\n"
        '   1 = "Male"\r\n'
        '   2 = "Female"\r\n'
        '   -9 = "Missing"\r\n'
    )
    layout = parse_layout(text)
    assert layout.labels == {"STU_ID": "Student ID", "X1PAR1OCC_STEM1": "X1 Parent 1: STEM code"}
    assert layout.codes("X1SEX") == {1: "Male", 2: "Female", -9: "Missing"}
    assert layout.substantive_codes("X1SEX") == {1: "Male", 2: "Female"}


def test_official_layout_has_all_variables():
    layout = load_layout(ROOT / "registry" / "hsls09" / "Layout_STUDENT.txt")
    assert len(layout.labels) == 9201
    assert layout.substantive_codes("X4EVRATNDCLG") == {0: "No", 1: "Yes"}
