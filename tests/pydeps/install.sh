#!/bin/sh
# Installs tests/pydeps/requirements.txt into DIR (default: .pydeps in the
# source tree) with pip --target, so the system Python is left alone.
#
#   tests/pydeps/install.sh [DIR]
#
# Runs again only when the requirements change (DIR/.requirements holds the
# copy that was installed).  Without network access pip fails; that is not an
# error here: the tests that need these packages skip and print why, with the
# reason this script leaves in DIR/.failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$(cd "$here/../.." && pwd)/.pydeps}
req=$here/requirements.txt
if [ -f "$dir/.requirements" ] && cmp -s "$req" "$dir/.requirements"; then
	exit 0
fi
if ! /usr/bin/python3 -m pip --version >/dev/null 2>&1; then
	mkdir -p "$dir" && echo "python3-pip is not installed (make deps-test installs it)" > "$dir/.failed"
	echo "pydeps: python3 -m pip is missing; the export tests will skip" >&2
	exit 0
fi
rm -rf "$dir.new" && mkdir -p "$dir.new" || exit 1
echo "pydeps: installing $(grep -v '^#' "$req" | tr '\n' ' ')into $dir"
if /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --no-input \
		--target "$dir.new" -r "$req" 2> "$dir.new/.pip-errors"; then
	cp "$req" "$dir.new/.requirements"
	rm -f "$dir.new/.pip-errors"
	rm -rf "$dir" && mv "$dir.new" "$dir"
else
	# Keep whatever was installed before; record why this attempt failed.
	mkdir -p "$dir"
	{ echo "pip could not install tests/pydeps/requirements.txt:"; tail -3 "$dir.new/.pip-errors"; } > "$dir/.failed"
	rm -rf "$dir.new"
	echo "pydeps: pip failed (see $dir/.failed); the export tests will skip" >&2
fi
exit 0
