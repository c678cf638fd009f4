#!/usr/bin/env bash
# Builds OCaml 5.3.0 from source into peers/build/ocaml-5.3.0 (a prefix of its
# own, git-ignored), for the parallel OCaml 5 peers in peers/ocaml5.
# The source comes from the npm package `ocaml@5.3.0` (the compiler's source
# tree as released, packaged for esy), fetched with the ordinary npm client.
# Idempotent: does nothing when the prefix already holds ocamlopt 5.3.0.
# Takes about 8-15 minutes on 2 cores; not run by CI.
# Usage: peers/install-ocaml5.sh      (JOBS=<n> to change make's -j, default 2)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version=5.3.0
prefix="$here/build/ocaml-$version"
src="$here/build/src"
if [ -x "$prefix/bin/ocamlopt" ] && [ "$("$prefix/bin/ocamlopt" -version)" = "$version" ]; then
    echo "install-ocaml5.sh: OCaml $version already in $prefix"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "install-ocaml5.sh: installing npm (Debian package)"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends npm
fi
# The compiler's configure needs a C compiler and make.
for tool in cc make; do
    command -v "$tool" >/dev/null 2>&1 || { echo "install-ocaml5.sh: $tool not found" >&2; exit 1; }
done
rm -rf "$src" && mkdir -p "$src"
(cd "$src" && npm pack --silent "ocaml@$version" >/dev/null && tar xzf "ocaml-$version.tgz")
cd "$src/package"
grep -qx "$version" VERSION || { echo "install-ocaml5.sh: not OCaml $version source" >&2; exit 1; }
# Default configuration (no flambda): what `opam switch create 5.3.0` builds.
./configure --prefix="$prefix" >configure.log 2>&1 || { tail -30 configure.log >&2; exit 1; }
make -j"${JOBS:-2}" >make.log 2>&1 || { tail -30 make.log >&2; exit 1; }
make install >install.log 2>&1 || { tail -30 install.log >&2; exit 1; }
rm -rf "$src"   # ~1 GB of objects; the prefix is all the peers need
echo "install-ocaml5.sh: OCaml $("$prefix/bin/ocamlopt" -version) installed in $prefix"
