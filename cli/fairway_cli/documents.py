"""Files the user gives the CLI: text, and JSON or YAML (with PyYAML) by the file's suffix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fairway_cli.errors import UsageError


def read_text(path: Path, what: str = "") -> str:
    """The file at `path` as UTF-8 text, or a usage error naming it (and `what` it is)."""
    name = f"the {what} {path}" if what else str(path)
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {name}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{name} is not UTF-8 text") from None


def read_document(path: Path) -> Any:
    """The data in a JSON file, or a YAML one (.yaml, .yml); a usage error names the file."""
    text = read_text(path)
    return _parse_yaml(text, path) if path.suffix in {".yaml", ".yml"} else _parse_json(text, path)


def _parse_json(text: str, path: Path) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{path} is not valid JSON: {exc}") from None


def _parse_yaml(text: str, path: Path) -> Any:
    try:
        import yaml  # optional: `pip install fairway-cli[yaml]`
    except ImportError:
        raise UsageError(f"reading {path} needs PyYAML (pip install pyyaml); or use JSON") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageError(f"{path} is not valid YAML: {exc}") from None
