"""Version metadata: one version, read by the installed metadata and the citation file."""

from importlib import metadata
from pathlib import Path

import sspgm

ROOT = Path(__file__).resolve().parent.parent


def test_installed_metadata_has_the_package_version():
    assert metadata.version("sspgm") == sspgm.__version__


def test_citation_file_cites_this_version():
    lines = (ROOT / "CITATION.cff").read_text().splitlines()
    assert f"version: {sspgm.__version__}" in lines
