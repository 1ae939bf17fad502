"""Package metadata: one version, read by the installed metadata and the citation file; the
Python classifiers and the paper's URL."""

import sys
from importlib import metadata
from pathlib import Path

import sspgm

ROOT = Path(__file__).resolve().parent.parent


def test_installed_metadata_has_the_package_version():
    assert metadata.version("sspgm") == sspgm.__version__


def test_citation_file_cites_this_version():
    lines = (ROOT / "CITATION.cff").read_text().splitlines()
    assert f"version: {sspgm.__version__}" in lines


def test_python_classifiers_run_from_the_floor_to_this_python():
    """One classifier per Python 3 minor version from ``requires-python``'s floor on, with
    no gap, and the version running this test among them."""
    installed = metadata.metadata("sspgm")
    floor = installed["Requires-Python"]
    assert floor.startswith(">=3."), floor
    minors = sorted(int(c.rsplit(".", 1)[1]) for c in installed.get_all("Classifier")
                    if c.startswith("Programming Language :: Python :: 3."))
    assert minors == list(range(int(floor.removeprefix(">=3.")), minors[-1] + 1))
    assert sys.version_info.minor in minors


def test_paper_url_is_the_one_the_citation_file_gives():
    urls = dict(value.split(", ", 1) for value in metadata.metadata("sspgm").get_all("Project-URL"))
    cited = [line.strip() for line in (ROOT / "CITATION.cff").read_text().splitlines()]
    assert f'url: "{urls["Paper"]}"' in cited
