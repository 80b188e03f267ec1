"""sim.bench.claims: its candidate enumeration against a brute-force count, and a quick run."""

import json

import numpy as np
import pytest

from sim.bench import claims


def brute_pairs(positions, tile):
    """Every (s, j, c) with positions[j] = positions[s] - offset_c, j earlier in s's tile."""
    fs, hs = claims.FS, claims.HS
    out = []
    for s, q in enumerate(positions):
        for c in range(1, 8):
            off = (c >> 2) * fs + ((c >> 1) & 1) * hs + (c & 1)
            for j in range(s - s % tile, s):
                if off > 0 and positions[j] == q - off:
                    out.append((s, j, c))
    return sorted(out)


def test_candidate_pairs_equal_a_brute_force_search():
    rng = np.random.default_rng(3)
    positions = np.sort(rng.choice(3 * claims.FS, 150, replace=False))
    for tile in (1, 37, 1024):
        got = sorted(map(tuple, claims.candidate_pairs(positions, tile).tolist()))
        assert got == brute_pairs(positions.tolist(), tile)


def test_quick_run_writes_the_table(tmp_path):
    claims.main(["--quick", "-o", str(tmp_path)])
    text = (tmp_path / "claims.md").read_text()
    assert text.count("\n|") == 7                      # header rule and six claims
    data = json.loads((tmp_path / "claims.json").read_text())
    assert 0 < data["block_similarity"]["float features"]["best above 0.85"] < 1
    assert (tmp_path / "block_similarity.png").stat().st_size > 0


def test_readme_block_is_replaced_and_markers_are_required(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- claims:begin -->\nold\n<!-- claims:end -->\nb\n")
    claims.write_into(readme, "new\n")
    assert readme.read_text() == "a\n<!-- claims:begin -->\nnew\n<!-- claims:end -->\nb\n"
    readme.write_text("no markers\n")
    with pytest.raises(SystemExit, match="must hold '<!-- claims:begin -->' once"):
        claims.write_into(readme, "new\n")
