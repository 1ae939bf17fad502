"""The ``sspgm-cli`` directive: the command line's reference, rendered from its argparse parsers.

``.. sspgm-cli::`` with no argument renders the top-level parser (``sspgm
--help``); ``.. sspgm-cli:: solve`` renders the full parser of one
sub-command, as :func:`sspgm.cli.build_parser` registers it when that
sub-command runs. Each parser becomes its description, its usage line, one
option list per argument group and its epilog, built as docutils nodes from
the parser itself (help strings are never parsed as reST), so the page says
exactly what ``--help`` says.
"""

import argparse
import textwrap

from docutils import nodes
from docutils.parsers.rst import Directive

from sspgm.cli import build_parser


USAGE_WIDTH = 88
"""Characters per line of a usage block (the body of a page shows about 90)."""


def _subparser(parser, name):
    """The sub-parser registered under ``name``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise ValueError(f"the parser has no sub-command {name!r}")


def _paragraphs(text):
    """One paragraph node per blank-line-separated block of ``text``, as plain text."""
    return [nodes.paragraph(text=" ".join(block.split()))
            for block in text.split("\n\n") if block.strip()]


def _option(action, formatter):
    """One ``option_list_item``: the flags with their argument, then the expanded help."""
    group = nodes.option_group()
    if action.option_strings:
        metavar = None
        if action.nargs != 0:
            metavar = formatter._format_args(action, formatter._get_default_metavar_for_optional(
                action))
        for flag in action.option_strings:
            option = nodes.option()
            option += nodes.option_string(text=flag)
            if metavar:
                option += nodes.option_argument(text=metavar, delimiter=" ")
            group += option
    else:
        option = nodes.option()
        option += nodes.option_string(
            text=formatter._format_args(action, formatter._get_default_metavar_for_positional(
                action)))
        group += option
    description = nodes.description()
    help_text = formatter._expand_help(action) if action.help else ""
    description += nodes.paragraph(text=help_text.strip())
    item = nodes.option_list_item()
    item += group
    item += description
    return item


def _commands(action):
    """The sub-commands of the top-level parser, as a definition list."""
    listing = nodes.definition_list()
    for choice in action._choices_actions:
        item = nodes.definition_list_item()
        item += nodes.term(text=f"sspgm {choice.dest}")
        definition = nodes.definition()
        definition += nodes.paragraph(text=choice.help)
        item += definition
        listing += item
    return listing


def render_parser(parser):
    """The nodes of ``parser``'s reference: description, usage, option groups, epilog."""
    formatter = parser._get_formatter()
    out = []
    if parser.description:
        out.extend(_paragraphs(parser.description))
    usage = formatter._format_usage(parser.usage, parser._actions,
                                    parser._mutually_exclusive_groups, "usage: ").strip()
    usage = textwrap.fill(" ".join(usage.split()), USAGE_WIDTH, subsequent_indent="    ",
                          break_long_words=False, break_on_hyphens=False)
    out.append(nodes.literal_block(text=usage, language="none"))
    for group in parser._action_groups:
        actions = [a for a in group._group_actions if a.help is not argparse.SUPPRESS]
        if not actions:
            continue
        out.append(nodes.rubric(text=group.title))
        if group.description:
            out.extend(_paragraphs(group.description))
        listing = nodes.option_list()
        for action in actions:
            if isinstance(action, argparse._SubParsersAction):
                out.append(_commands(action))
            else:
                listing += _option(action, formatter)
        if len(listing):
            out.append(listing)
    if parser.epilog:
        if parser.formatter_class is argparse.RawDescriptionHelpFormatter:
            out.append(nodes.literal_block(text=parser.epilog, language="none"))
        else:
            out.extend(_paragraphs(parser.epilog))
    return out


class SspgmCli(Directive):
    """``.. sspgm-cli:: [COMMAND]``: the reference of ``sspgm`` or of one sub-command."""

    optional_arguments = 1

    def run(self):
        if self.arguments:
            command = self.arguments[0]
            parser = _subparser(build_parser(command), command)
        else:
            parser = build_parser()
        return render_parser(parser)


def setup(app):
    app.add_directive("sspgm-cli", SspgmCli)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
