#!/usr/bin/env bash
# Builds every peer program into peers/build/{haskell,ocaml,ocaml5,c,java}.
# A language whose compiler is missing is reported and skipped (not a failure).
# Usage: peers/build.sh            (run peers/install.sh first to get the compilers)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/build"
mkdir -p "$out"
status=0

# Haskell. -O2: GHC's optimising pipeline. -threaded: the multicore RTS, so
# `+RTS -N<k>` runs sparks on k capabilities. -rtsopts: accept all +RTS
# options at run time (-N, -A, -s). -fno-full-laziness and -fno-cse: stop GHC
# from floating `make d` out of binarytrees' iteration loop (full laziness)
# and from sharing the two identical subtrees `make (d-1)` (CSE); with either,
# binarytrees would allocate far fewer nodes than numagc's version. The same
# flags are used for every Haskell peer so all are built alike, except that
# NBody.hs turns CSE back on in an OPTIONS_GHC pragma (GHC 9.0.2 panics on it
# with both flags; nbody has no trees for CSE to share).
if command -v ghc >/dev/null 2>&1; then
    mkdir -p "$out/haskell/obj"
    for src in "$here"/haskell/*.hs; do
        name="$(basename "$src" .hs | tr 'A-Z' 'a-z')"
        echo "ghc: $name"
        ghc -O2 -threaded -rtsopts -fno-full-laziness -fno-cse \
            -outputdir "$out/haskell/obj/$name" -o "$out/haskell/$name" "$src" >/dev/null || status=1
    done
else
    echo "build.sh: ghc not found; Haskell peers skipped" >&2
fi

# OCaml (sequential baseline). ocamlopt -O3 when the compiler has flambda
# (-O3 is accepted only by flambda compilers), plain ocamlopt otherwise;
# -unsafe is not used (bounds checks stay, as in numagc's Rust).
if command -v ocamlopt >/dev/null 2>&1; then
    oflags=""
    if ocamlopt -config | grep -q '^flambda: true'; then oflags="-O3"; fi
    mkdir -p "$out/ocaml/obj"
    for src in "$here"/ocaml/*.ml; do
        name="$(basename "$src" .ml)"
        echo "ocamlopt $oflags: $name"
        cp "$src" "$out/ocaml/obj/$name.ml"
        (cd "$out/ocaml/obj" && ocamlopt $oflags -o "$out/ocaml/$name" "$name.ml") || status=1
    done
else
    echo "build.sh: ocamlopt not found; OCaml peers skipped" >&2
fi

# OCaml 5 (parallel, peers/ocaml5): the compiler install-ocaml5.sh builds
# into build/ocaml-5.3.0 (or $OCAML5, a bin directory holding OCaml 5's
# ocamlopt). Same flags rule as above. Each peer is linked with pool.ml, its
# fork-join over domains; gcpauses, the reader of the peers' GC pauses, with
# the unix and runtime_events libraries shipped with the compiler.
ocaml5="${OCAML5:-$out/ocaml-5.3.0/bin}/ocamlopt"
if [ -x "$ocaml5" ]; then
    oflags=""
    if "$ocaml5" -config | grep -q '^flambda: true'; then oflags="-O3"; fi
    obj="$out/ocaml5/obj"
    mkdir -p "$obj"
    cp "$here"/ocaml5/*.ml "$obj/"
    echo "ocamlopt $("$ocaml5" -version) $oflags: gcpauses"
    (cd "$obj" && "$ocaml5" $oflags -I +unix -I +runtime_events unix.cmxa runtime_events.cmxa \
        -o "$out/ocaml5/gcpauses" gcpauses.ml) || status=1
    for src in "$here"/ocaml5/*.ml; do
        name="$(basename "$src" .ml)"
        case "$name" in pool|gcpauses) continue ;; esac
        echo "ocamlopt $("$ocaml5" -version) $oflags: $name"
        (cd "$obj" && "$ocaml5" $oflags -o "$out/ocaml5/$name" pool.ml "$name.ml") || status=1
    done
else
    echo "build.sh: OCaml 5 not found ($ocaml5); OCaml 5 peers skipped (peers/install-ocaml5.sh builds it)" >&2
fi

# C (peers/c: the bump-arena binarytrees of issue 18, the Benchmarks Game's
# C programs' design). -O3 and -pthread only (no -march=native, so the
# binary runs on any x86-64); $CC overrides gcc.
cc="${CC:-gcc}"
if command -v "$cc" >/dev/null 2>&1; then
    mkdir -p "$out/c"
    for src in "$here"/c/*.c; do
        name="$(basename "$src" .c)"
        echo "$cc -O3 -pthread: $name"
        "$cc" -O3 -pthread -o "$out/c/$name" "$src" || status=1
    done
else
    echo "build.sh: $cc not found; C peers skipped" >&2
fi

# numagc from C (examples/c/parfib.c, binarytrees.c, coins.c, gcbench.c: the compiled-code interface's
# register code from C), against the static library, -O2 as the C
# examples are built; `numagc compare` runs it as `numagc-c`.
root="$(cd "$here/.." && pwd)"
if command -v "$cc" >/dev/null 2>&1 && command -v cargo >/dev/null 2>&1; then
    if (cd "$root" && cargo build --release -q -p numagc-capi); then
        mkdir -p "$out/numagc-c"
        for name in parfib binarytrees coins gcbench; do
            echo "$cc -O2 (numagc_inline.h, libnumagc.a): $name"
            "$cc" -std=c11 -O2 -I"$root/include" -o "$out/numagc-c/$name" \
                "$root/examples/c/$name.c" -L"$root/target/release" -l:libnumagc.a \
                -lpthread -ldl -lm || status=1
        done
    else
        echo "build.sh: cargo build -p numagc-capi failed; numagc-c skipped" >&2
        status=1
    fi
else
    echo "build.sh: $cc or cargo not found; numagc-c skipped" >&2
fi

# Java: plain javac (the JIT optimises at run time). The collector is chosen
# when running: java -XX:+UseParallelGC ... or java -XX:+UseG1GC ...
if command -v javac >/dev/null 2>&1; then
    mkdir -p "$out/java"
    echo "javac: $(cd "$here/java" && echo *.java)"
    javac -d "$out/java" "$here"/java/*.java || status=1
else
    echo "build.sh: javac not found; Java peers skipped" >&2
fi

exit $status
