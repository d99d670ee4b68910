"""Prompt templates live in playground.lib.templating (prompts use them too); evaluate's modules import them here."""

from playground.lib.templating import (
    MAX_TEMPLATE,
    NAME,
    NAME_RE,
    OPEN,
    TOKEN,
    render,
    segments,
    syntax_errors,
    variables,
)

__all__ = ["MAX_TEMPLATE", "NAME", "NAME_RE", "OPEN", "TOKEN", "render", "segments", "syntax_errors", "variables"]
