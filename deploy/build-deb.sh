#!/usr/bin/env bash
# `make deb`: builds crcrd_<version>_<arch>.deb with dpkg-buildpackage (debian/) from a
# clean copy of the tree (the files git tracks or would track, as they are now: no build
# folders, nothing ignored), without network. Output: OUT_DIR (default build-deb/).
# DEB_BUILD_OPTIONS defaults to nocheck (the package's build compiles no tests; `make test`
# is where they run). ccache, when configured, is used through its environment.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$src/build-deb}" && cd "${1:-$src/build-deb}" && pwd)
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
arch=$(dpkg-architecture -q DEB_HOST_ARCH)
work=$out/src/crcrd-$version

rm -rf "$out/src"
mkdir -p "$work"
git -C "$src" ls-files -z --cached --others --exclude-standard |
  (cd "$src" && xargs -0 -r sh -c 'for f; do [ -e "$f" ] || [ -L "$f" ] && printf "%s\0" "$f"; done' sh) |
  tar -C "$src" --null -T - -cf - | tar -C "$work" -xf -

# debhelper gives the build a HOME of its own: keep ccache's cache and base folder.
if command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-$(ccache -k cache_dir)}
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$work}
fi
export DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-nocheck parallel=$(nproc)}
(cd "$work" && dpkg-buildpackage -b -us -uc)

deb=crcrd_${version}_${arch}.deb
mv -f "$out/src/$deb" "$out/$deb"
rm -rf "$out/src"
echo "$out/$deb"
