#!/usr/bin/env bash
# Installs the allocators that `numagc arena-bench` compares numagc-arena with
# (issue 7, item 6), from Debian's own packages:
#   jemalloc  libjemalloc2          libjemalloc.so.2
#   mimalloc  libmimalloc2.0        libmimalloc.so.2.0
#   tcmalloc  libgoogle-perftools4  libtcmalloc_minimal.so.4 (from its dependency libtcmalloc-minimal4)
# glibc's malloc needs nothing; numagc-malloc is built by cargo.
# Idempotent: packages already installed are skipped, and `apt-get update` runs
# only when something is missing and apt has no candidate for it. Needs root
# (apt-get); uses sudo only when not root and sudo exists. Not part of CI.
set -euo pipefail
packages=(libjemalloc2 libmimalloc2.0 libgoogle-perftools4)
want=()
for p in "${packages[@]}"; do
    if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        echo "install-allocators.sh: $p already installed"
    else
        want+=("$p")
    fi
done
if [ ${#want[@]} -gt 0 ]; then
    as_root=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            as_root=(sudo)
        else
            echo "install-allocators.sh: need root to install ${want[*]} (no sudo)" >&2
            exit 1
        fi
    fi
    need_update=0
    for p in "${want[@]}"; do
        cand="$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')"
        if [ -z "$cand" ] || [ "$cand" = "(none)" ]; then need_update=1; fi
    done
    if [ "$need_update" -eq 1 ]; then
        "${as_root[@]}" apt-get update
    fi
    echo "install-allocators.sh: installing ${want[*]}"
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${want[@]}"
fi
# The shared objects that arena-bench preloads.
status=0
for pair in libjemalloc2:libjemalloc.so.2 libmimalloc2.0:libmimalloc.so.2.0 libtcmalloc-minimal4:libtcmalloc_minimal.so.4; do
    pkg="${pair%%:*}"
    lib="${pair#*:}"
    path="$(dpkg -L "$pkg" 2>/dev/null | grep "/$lib\$" | head -n 1 || true)"
    if [ -n "$path" ] && [ -e "$path" ]; then
        echo "  $lib: $path"
    else
        echo "install-allocators.sh: $lib not found in package $pkg" >&2
        status=1
    fi
done
exit $status
