"""``--help`` shows plain text: no reST markup from the docstrings it reuses."""

import re

import pytest

import sspgm.cli

MARKUP = re.compile(r"``|:[a-z]+:`|`[^`\s][^`]*`_")


@pytest.mark.parametrize("argv", [["--help"]] + [[name, "--help"] for name in sspgm.cli.COMMANDS])
def test_help_has_no_rest_markup(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        sspgm.cli.main(argv)
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.strip()
    assert not MARKUP.findall(out), MARKUP.findall(out)


@pytest.mark.parametrize("text", ["A chain of ``n`` states.", "See :func:`solve`.",
                                  "See `the paper <https://example.org>`_."])
def test_the_check_catches_docstring_markup(text):
    assert MARKUP.search(text)


def test_the_check_lets_plain_quotes_through():
    assert not MARKUP.search("the `validate` extra; `pip install 'sspgm[gym]'`")
