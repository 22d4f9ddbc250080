"""Papers are cited by authors, year and title, never by an internal file number."""

import pytest

from robodyn.papers import PAPERS, cite, reference


def test_every_paper_cites_by_author_and_title():
    assert set(PAPERS) == {"wso", "stepwise", "icpso", "ur10e", "calibration"}
    assert cite("wso").startswith("Ni et al. 2024")
    assert cite("calibration").startswith("Li et al. 2023")
    assert cite("ur10e").startswith("Mamedov & Mikhel 2020")
    for key, p in PAPERS.items():
        full = reference(key)
        assert p.authors[0] in full and p.title in full and str(p.year) in full
        assert "seed" not in full.lower()
    with pytest.raises(KeyError, match="known"):
        cite("no_such_paper")
