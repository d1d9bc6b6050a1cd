#!/usr/bin/env bash
# `make dist`: build the two self-hosting artifacts from this checkout.
#   dist/tornchat-<version>-linux-<arch>  PyInstaller one-file executable: the interpreter, every dependency,
#                                         the migrations, the emoji table and the web client inside; needs no Python.
#   dist/tornchat-<version>.pyz           pex zipapp for a machine with CPython 3.11, 3.12 or 3.13 (on x86_64;
#                                         on another architecture, for the building interpreter's version only).
# The tools come from packaging/requirements.txt into build/venv; PYTHON picks the building interpreter
# (default python3, 3.11+, built with --enable-shared as PyInstaller needs).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
version=$("$python" -c 'import runpy; print(runpy.run_path("tornchat/__init__.py")["__version__"])')
arch=$(uname -m)
venv=build/venv
pip=("$venv/bin/pip" --quiet --disable-pip-version-check)
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"${pip[@]}" install -r packaging/requirements.txt

# One wheel of this checkout: installed into the build venv for PyInstaller, and given to pex.
rm -rf build/wheel
"${pip[@]}" wheel --no-deps --wheel-dir build/wheel .
wheel=$(echo build/wheel/tornchat-"$version"-*.whl)
"${pip[@]}" install "$wheel"
"${pip[@]}" install --force-reinstall --no-deps "$wheel"
mkdir -p dist

executable="dist/tornchat-$version-linux-$arch"
start=$(date +%s)
# Run from build/ so that the analysis finds the installed packages, never the checkout's sources.
# _cffi_backend: PyNaCl's compiled module imports it, which PyInstaller's analysis of Python code misses.
(cd build && venv/bin/pyinstaller --onefile --noconfirm --clean --log-level WARN \
    --name "tornchat-$version-linux-$arch" --distpath ../dist --workpath pyinstaller --specpath pyinstaller \
    --collect-data storage --collect-data tornchat.web --hidden-import _cffi_backend ../packaging/entry.py)
echo "built $executable in $(($(date +%s) - start)) s"

zipapp="dist/tornchat-$version.pyz"
start=$(date +%s)
if [ "$arch" = x86_64 ]; then
    # Complete platforms pick each compiled dependency's wheel for CPython 3.11, 3.12 and 3.13 without
    # those interpreters on this machine. One more version: on a Debian 12 x86_64 machine that has it,
    # `build/venv/bin/pex3 interpreter inspect --python PYTHON --markers --tags`, its "path" key dropped.
    # The newest glibc they name (2.36) lets pex pick wheels needing up to that: the zipapp needs glibc 2.34+.
    targets=()
    for platform in packaging/platforms/*-manylinux-x86_64.json; do targets+=(--complete-platform "$platform"); done
else
    targets=(--python "$python")
fi
"$venv/bin/pex" "$wheel" --entry-point tornchat.cli:main --output-file "$zipapp" "${targets[@]}" \
    --python-shebang '/usr/bin/env python3' 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
echo "built $zipapp in $(($(date +%s) - start)) s"

"$executable" --version
ls -l "$executable" "$zipapp"
