"""Write storage/text/emoji_names.json, Zulip's emoji names, from Zulip's own name table.

Zulip's clients offer the names of Zulip's `tools/setup/emoji/emoji_names.py` (EMOJI_NAME_MAPS: for
each emoji code, a canonical name and aliases); the server's `name_to_codepoint` and
`codepoint_to_name` are built from it. This script reads that table from either

- the PyPI package `zulip-emoji-mapping` (its `zulip_emoji_mapping/emoji_names.py` is Zulip's
  EMOJI_NAME_MAPS as Zulip's `generate_emoji_names` writes it; Apache-2.0), the default, or
- a checkout of Zulip (`--zulip-file path/to/tools/setup/emoji/emoji_names.py`, Apache-2.0),

and writes the data file tornchat loads at start. Build-time only: `pip install zulip-emoji-mapping
regex`, then `python -m storage.text.emoji_data_build` (add `--check` to fail when the file is stale).
The `regex` package supplies Unicode's Emoji_Presentation property: a lone character without it
("↔", "©") is text, not an emoji, when typed in a message (Zulip's TEXT_PRESENTATION_RE).
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import json
import os
import sys
from typing import Any

OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "emoji_names.json")
PACKAGE = "zulip-emoji-mapping"
ZULIP_FILE = "zulip/zulip tools/setup/emoji/emoji_names.py"


def read_zulip_file(path: str) -> dict[str, dict[str, Any]]:
    """Return EMOJI_NAME_MAPS from a Python file, read as a literal (never executed)."""
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read(), path)
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "EMOJI_NAME_MAPS" and node.value is not None:  # type: ignore[attr-defined]
            return ast.literal_eval(node.value)  # type: ignore[attr-defined]
    raise SystemExit(f"{path}: no EMOJI_NAME_MAPS literal")


def source_of(zulip_file: str | None) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Return (EMOJI_NAME_MAPS, header naming where it came from)."""
    if zulip_file:
        header = {"source": ZULIP_FILE, "version": "checkout", "license": "Apache-2.0"}
        return read_zulip_file(zulip_file), header
    import zulip_emoji_mapping

    path = os.path.join(os.path.dirname(zulip_emoji_mapping.__file__), "emoji_names.py")
    version = importlib.metadata.version(PACKAGE)
    header = {
        "source": f"PyPI {PACKAGE} {version} (zulip_emoji_mapping/emoji_names.py, a copy of {ZULIP_FILE})",
        "version": version,
        "license": importlib.metadata.metadata(PACKAGE).get("License") or "Apache-2.0",
    }
    return read_zulip_file(path), header


def text_presentation(codes: list[str]) -> list[str]:
    """Codes of lone characters (or keycap bases) that Unicode shows as text unless FE0F follows."""
    import regex

    not_emoji = regex.compile(r"\P{Emoji_Presentation}")
    found = set()
    for code in codes:
        parts = code.split("-")
        if len(parts) == 1 or parts[1:] == ["20e3"]:
            if not_emoji.fullmatch(chr(int(parts[0], 16))):
                found.add(parts[0])
    return sorted(found, key=lambda code: int(code, 16))


def render(maps: dict[str, dict[str, Any]], header: dict[str, str]) -> str:
    """Return the data file's text: a header, then one emoji a line ([code, canonical, aliases])."""
    lines = ["{"]
    for key, value in header.items():
        lines.append(f"  {json.dumps(key)}: {json.dumps(value)},")
    lines.append('  "generated_by": "python -m storage.text.emoji_data_build",')
    lines.append(f'  "text_presentation": {json.dumps(text_presentation(list(maps)))},')
    lines.append('  "emoji": [')
    rows = [json.dumps([code, info["canonical_name"], list(info["aliases"])]) for code, info in maps.items()]
    lines.append(",\n".join("    " + row for row in rows))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--zulip-file", help="Zulip's tools/setup/emoji/emoji_names.py instead of the PyPI package")
    parser.add_argument("--output", default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file differs instead of writing it")
    args = parser.parse_args(argv)
    maps, header = source_of(args.zulip_file)
    text = render(maps, header)
    if args.check:
        with open(args.output, encoding="utf-8") as current:
            stale = current.read() != text
        print(f"{args.output}: {'stale' if stale else 'current'}")
        return 1 if stale else 0
    with open(args.output + ".tmp", "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(args.output + ".tmp", args.output)
    print(f"{args.output}: {len(maps)} emoji")
    return 0


if __name__ == "__main__":
    sys.exit(main())
