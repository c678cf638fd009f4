#!/usr/bin/env bash
# Installs the peer compilers from Debian packages, builds OCaml 5.3 from
# source into peers/build/ocaml-5.3.0 (install-ocaml5.sh: ~8-15 minutes on
# 2 cores the first time; skipped with --no-ocaml5), then builds the peers.
# Idempotent: a compiler already on the PATH (or OCaml 5 already built) is
# not installed again. Needs root (apt-get). Not run by CI.
# Usage: peers/install.sh [--no-ocaml5]
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
if [ "${1:-}" != --no-ocaml5 ]; then "$here/install-ocaml5.sh"; fi
exec "$here/build.sh"
