"""Config validation with messages that name the offending key (imported by the Snakefile;
jsonschema and yaml only, so `snakemake -n` stays fast)."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml


def _key(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def config_errors(data: dict, schema_path, prefix: str = "") -> list[str]:
    """Every schema violation as 'config key K: message', most specific first."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: (-len(e.absolute_path), e.message))
    msgs = []
    for e in errors:
        key = _key([*([prefix] if prefix else []), *e.absolute_path])
        msgs.append(f"config key {key or '(top level)'}: {e.message}")
    return msgs


def check_config(data: dict, schema_path, prefix: str = "") -> None:
    msgs = config_errors(data, schema_path, prefix)
    if msgs:
        raise ValueError(f"invalid configuration ({schema_path}):\n  " + "\n  ".join(msgs))
