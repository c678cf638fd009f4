(* binarytrees peer (numagc's crates/numagc-bench/src/benchmarks/binarytrees.rs).
   Usage: peers/build/ocaml/binarytrees DEPTH
   Sequential baseline (OCaml 4, one domain): the same trees, every node
   allocated, in the same order numagc's version computes them. *)
type tree = Nil | Node of tree * tree

let rec make d = if d = 0 then Node (Nil, Nil) else Node (make (d - 1), make (d - 1))

let rec check = function Nil -> 0 | Node (l, r) -> 1 + check l + check r

let min_depth = 4

let () =
  let max_depth = int_of_string Sys.argv.(1) in
  Printf.printf "stretch tree of depth %d\t check: %d\n" (max_depth + 1) (check (make (max_depth + 1)));
  let long_lived = make max_depth in
  let d = ref min_depth in
  while !d <= max_depth do
    let n = 1 lsl (max_depth - !d + min_depth) in
    let sum = ref 0 in
    for _ = 1 to n do
      sum := !sum + check (make !d)
    done;
    Printf.printf "%d\t trees of depth %d\t check: %d\n" n !d !sum;
    d := !d + 2
  done;
  Printf.printf "long lived tree of depth %d\t check: %d\n" max_depth (check long_lived)
