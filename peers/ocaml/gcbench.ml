(* GCBench peer (numagc's crates/numagc-bench/src/benchmarks/gcbench.rs).
   Usage: peers/build/ocaml/gcbench STRETCH_DEPTH LONG_LIVED_DEPTH MAX_DEPTH ARRAY_SIZE GRAIN
   Sequential baseline (GRAIN is accepted, unused). Nodes are immutable
   records {left; right; i; j}; both phases build bottom up, as numagc's. *)
type node = Leaf | Node of { left : node; right : node; i : int; j : int }

let tree_size d = (1 lsl (d + 1)) - 1
let num_iters s d = 2 * tree_size s / tree_size d

let rec make_tree d =
  if d = 0 then Node { left = Leaf; right = Leaf; i = 0; j = 0 }
  else
    let l = make_tree (d - 1) in
    let r = make_tree (d - 1) in
    Node { left = l; right = r; i = 0; j = 0 }

let rec count = function Leaf -> 0 | Node n -> 1 + count n.left + count n.right

let () =
  let a k = int_of_string Sys.argv.(k) in
  let stretch = a 1 and long_depth = a 2 and max_depth = a 3 and array_size = a 4 in
  print_string "Garbage Collector Test\n";
  Printf.printf " Stretching memory with a binary tree of depth %d: %d nodes\n" stretch (count (make_tree stretch));
  Printf.printf " Creating a long-lived binary tree of depth %d\n" long_depth;
  let long_lived = make_tree long_depth in
  Printf.printf " Creating a long-lived array of %d doubles\n" array_size;
  let array = Array.make array_size 0.0 in
  for i = 0 to (array_size / 2) - 1 do array.(i) <- 1.0 /. float_of_int i done;
  let d = ref 4 in
  while !d <= max_depth do
    let iters = num_iters stretch !d in
    let phase () =
      let nodes = ref 0 in
      for _ = 1 to iters do nodes := !nodes + count (make_tree !d) done;
      !nodes
    in
    let td = phase () in
    let bu = phase () in
    Printf.printf "Creating %d trees of depth %d: top down %d nodes, bottom up %d nodes\n" iters !d td bu;
    d := !d + 2
  done;
  Printf.printf "Long-lived tree: %d nodes; array[1000] == 1/1000: %b\n" (count long_lived) (array.(1000) = 1.0 /. 1000.0)
