(* GCBench peer, parallel (numagc's crates/numagc-bench/src/benchmarks/gcbench.rs).
   Usage: peers/build/ocaml5/gcbench STRETCH_DEPTH LONG_LIVED_DEPTH MAX_DEPTH ARRAY_SIZE GRAIN [WORKERS]
   WORKERS domains (Pool). The trees of each phase and depth are split in
   halves down to ranges of max 1 (GRAIN / tree_size d) trees built one
   after the other (numagc's par_reduce); the stretch and long-lived trees
   fork their subtrees deeper than 12. Nodes are immutable records; both
   phases build bottom up, as numagc's. *)
type node = Leaf | Node of { left : node; right : node; i : int; j : int }

let tree_size d = (1 lsl (d + 1)) - 1
let num_iters s d = 2 * tree_size s / tree_size d
let fork_depth = 12

let rec make_tree d =
  if d = 0 then Node { left = Leaf; right = Leaf; i = 0; j = 0 }
  else
    let l = make_tree (d - 1) in
    let r = make_tree (d - 1) in
    Node { left = l; right = r; i = 0; j = 0 }

let rec big d =
  if d <= fork_depth then make_tree d
  else
    let l, r = Pool.fork_join (fun () -> big (d - 1)) (fun () -> big (d - 1)) in
    Node { left = l; right = r; i = 0; j = 0 }

let rec count = function Leaf -> 0 | Node n -> 1 + count n.left + count n.right

(* Nodes of the trees lo..hi-1 of depth d. *)
let rec phase d lo hi per =
  if hi - lo <= per then begin
    let nodes = ref 0 in
    for _ = lo to hi - 1 do nodes := !nodes + count (make_tree d) done;
    !nodes
  end else
    let mid = lo + ((hi - lo) / 2) in
    let a, b = Pool.fork_join (fun () -> phase d lo mid per) (fun () -> phase d mid hi per) in
    a + b

let () =
  let a k = int_of_string Sys.argv.(k) in
  let stretch = a 1 and long_depth = a 2 and max_depth = a 3 and array_size = a 4 and grain = a 5 in
  let workers = if Array.length Sys.argv > 6 then a 6 else Domain.recommended_domain_count () in
  Pool.run workers @@ fun () ->
  print_string "Garbage Collector Test\n";
  Printf.printf " Stretching memory with a binary tree of depth %d: %d nodes\n" stretch (count (big stretch));
  Printf.printf " Creating a long-lived binary tree of depth %d\n" long_depth;
  let long_lived = big long_depth in
  Printf.printf " Creating a long-lived array of %d doubles\n" array_size;
  let array = Array.make array_size 0.0 in
  for i = 0 to (array_size / 2) - 1 do array.(i) <- 1.0 /. float_of_int i done;
  let d = ref 4 in
  while !d <= max_depth do
    let iters = num_iters stretch !d and per = max 1 (grain / tree_size !d) in
    let td = phase !d 0 iters per in
    let bu = phase !d 0 iters per in
    Printf.printf "Creating %d trees of depth %d: top down %d nodes, bottom up %d nodes\n" iters !d td bu;
    d := !d + 2
  done;
  Printf.printf "Long-lived tree: %d nodes; array[1000] == 1/1000: %b\n" (count long_lived) (array.(1000) = 1.0 /. 1000.0)
