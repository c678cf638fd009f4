#!/usr/bin/env bash
# Optional system tools for the tests: valgrind (the C example is run under
# memcheck when it is on PATH; without it that step is skipped) and gcc's
# AddressSanitizer/UndefinedBehaviorSanitizer runtimes (libasan, libubsan:
# dependencies of Debian/Ubuntu's gcc; without them the sanitized runs of the
# C examples are skipped); Open MPI with its headers, and libclang for the
# `mpi` crate's bindings (the `mpi` feature: PE groups over MPI, issue 19;
# without them scripts/test.sh skips the MPI tests, saying so). Idempotent:
# does nothing when the tools are present, or when packages cannot be
# installed here (not root, no password-less sudo, or no apt-get).
set -euo pipefail

missing=()
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
if command -v cc >/dev/null 2>&1 &&
   ! printf 'int main(void) { return 0; }\n' |
     cc -fsanitize=address,undefined -x c - -o /dev/null >/dev/null 2>&1; then
    missing+=(gcc)
fi
command -v mpicc >/dev/null 2>&1 || missing+=(libopenmpi-dev openmpi-bin)
# libclang itself (libclang.so, libclang-N.so), not libclang-cpp, a
# different library that other packages bring and bindgen cannot use.
ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1 ||
  ls /usr/lib/x86_64-linux-gnu/libclang.so* >/dev/null 2>&1 ||
  ls /usr/lib/x86_64-linux-gnu/libclang-[0-9]*.so* >/dev/null 2>&1 || missing+=(libclang-dev)
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: nothing to install"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-deps: no apt-get; install ${missing[*]} by hand"
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
else
    echo "install-deps: not root and no password-less sudo; install ${missing[*]} by hand"
    exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if "${sudo[@]}" apt-get update -qq && \
   "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    echo "install-deps: done"
else
    # No package registry reachable: the tests say what they skip (valgrind)
    # or fail naming what is missing (a C compiler).
    echo "install-deps: could not install ${missing[*]}; continuing without"
fi
