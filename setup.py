import re
from pathlib import Path

from setuptools import find_packages, setup

# The one place the version is written: tornchat/__init__.py (`tornchat --version`, the wheel, dist/ names).
INIT = (Path(__file__).parent / "tornchat" / "__init__.py").read_text(encoding="utf-8")
VERSION = re.search(r'^__version__ = "([^"]+)"$', INIT, re.M)[1]

setup(
    name="tornchat",
    version=VERSION,
    description="A self-hosted team chat server speaking the Zulip REST API, in one process and one SQLite file",
    python_requires=">=3.11",
    packages=find_packages(include=["tornchat", "tornchat.*", "storage", "storage.*", "scheduler", "scheduler.*"]),
    package_data={
        "storage.db": ["migrations/*.sql", "schema.sql"],
        "storage.text": ["emoji_names.json"],
        # The web client, served as it is (no build step): every file under tornchat/web/static/.
        "tornchat.web": ["static/*", "static/**/*"],
    },
    install_requires=[
        "tornado>=6.4",
        "msgspec>=0.18",
        "pynacl>=1.5",
        "markdown-it-py>=3.0",
        "linkify-it-py>=2.0",
        "google-re2>=1.1",
        "uri-template>=1.3",
        "pillow>=10.0",
    ],
    extras_require={
        "test": [
            "pytest>=8",
            "pytest-tornado>=0.8",
            "zulip>=0.9",
            "schemathesis>=4.32,<5",
            # storage/text/emoji_data_build.py's inputs: the test checks storage/text/emoji_names.json is current.
            "zulip-emoji-mapping==1.0.1",
            "regex>=2024.4",
            # The web client's browser tests (tests/browser/) drive Debian's chromium; no browser download.
            "playwright>=1.40",
        ],
    },
    entry_points={"console_scripts": ["tornchat=tornchat.cli:main"]},
)
