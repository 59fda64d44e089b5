"""The gallery's examples run, at a small size, as a user runs them (a fresh process each)."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize(
    "script, args, produces",
    [
        ("pca_out_of_core.py", ["20000"], None),
        ("streaming_isomap.py", ["{out}", "20000"], "streaming.png"),
        ("embed_and_draw.py", ["{out}", "20000"], "embedding.png"),
        ("single_cell_atlas.py", ["{out}", "3000", "300"], "pca.png"),
        ("compare_embeddings.py", ["{out}", "5000"], "quality.png"),
    ],
)
def test_example_runs(script, args, produces, tmp_path):
    argv = [a.format(out=tmp_path) for a in args]
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *argv], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr[-3000:]
    if produces:
        assert (tmp_path / produces).read_bytes()[:4] == b"\x89PNG"
