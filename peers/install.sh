#!/usr/bin/env bash
# Installs the peer compilers from Debian packages, then builds the peers.
# Idempotent: a compiler already on the PATH is not installed again.
# Needs root (apt-get). Only Debian's own packages are used.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
want=()
command -v ghc >/dev/null 2>&1 || want+=(ghc)
command -v ocamlopt >/dev/null 2>&1 || want+=(ocaml-nox)
command -v javac >/dev/null 2>&1 || want+=(default-jdk-headless)
if [ ${#want[@]} -gt 0 ]; then
    echo "install.sh: installing ${want[*]}"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${want[@]}"
else
    echo "install.sh: ghc, ocamlopt and javac already installed"
fi
exec "$here/build.sh"
