"""File lists as shell arguments, for the rules' commands (rules/common.smk). Standard library
only: the Snakefile imports it on every parse.

A named input or output of one file is a string in Snakemake (so is the placeholder of a
checkpoint's document not yet read, as `input.looks` of the claims rule after an interrupted
run: the looks' first pass), a list otherwise. Joining a string with " ".join spelled it out
character by character (`--looks r e s u l t s / l o o k s / l o o k 1 . j s o n`, issue #39).
"""

from __future__ import annotations

import os


def spaced(files) -> str:
    """Files as one argument list: one file (a string or a path) is one argument, a list
    one argument per file."""
    if isinstance(files, (str, os.PathLike)):
        return os.fspath(files)
    return " ".join(os.fspath(f) for f in files)


def option(flag: str, files) -> str:
    """`flag f1 f2 ...`, or nothing without files."""
    listed = spaced(files)
    return f"{flag} {listed}" if listed else ""
