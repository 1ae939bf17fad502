"""The README works as pasted: its Python snippets, and its ``sspgm`` commands.

The Python blocks run in order in one namespace, as a reader pasting them into
one session would. The ``sspgm`` commands of the bash blocks run through the
command line's ``main``, with their optional ``[...]`` parts left out; the
forms with placeholders (``MODULE:FUNCTION``, ``HOST``), with alternatives
(``a | b``), and ``sspgm validate`` (a sweep of minutes, checked by its own
tests) are not run here.
"""

import os
import re
import shlex
import warnings

import pytest

from reference.errors import NotCertifiedWarning
from sspgm.cli import main

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
SKIPPED = ("validate", "|", "...", "MODULE", "HOST")


def _blocks(language):
    with open(README, encoding="utf-8") as handle:
        text = handle.read()
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def _commands():
    """The distinct runnable ``sspgm`` commands of the README's bash blocks, as argv lists."""
    found = []
    for block in _blocks("bash"):
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line)
            for segment in line.split("&&"):
                words = segment.split()
                if not words or os.path.basename(words[0]) != "sspgm":
                    continue
                command = " ".join(words[1:])
                while re.search(r"\[[^\[\]]*\]", command):
                    command = re.sub(r"\s*\[[^\[\]]*\]", "", command)
                if not any(mark in command for mark in SKIPPED) and command not in found:
                    found.append(command)
    return found


def test_the_readme_has_python_blocks_and_commands():
    assert len(_blocks("python")) >= 4
    assert "solve" in _commands() and any(c.startswith("bounds") for c in _commands())


def test_python_snippets_run_in_order():
    namespace = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotCertifiedWarning)
        for block in _blocks("python"):
            exec(compile(block, README, "exec"), namespace)
    assert namespace["cer"].certified


@pytest.mark.parametrize("command", _commands())
def test_sspgm_commands_exit_0(command, capsys):
    status = main(shlex.split(command))
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert captured.out
