"""Files the user gives the CLI: JSON, or YAML (with PyYAML) by the file's suffix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fairway_cli.errors import UsageError


def read_document(path: Path) -> Any:
    """The data in a JSON file, or a YAML one (.yaml, .yml); a usage error names the file."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
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
