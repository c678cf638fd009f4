(* binarytrees peer, parallel (numagc's crates/numagc-bench/src/benchmarks/binarytrees.rs).
   Usage: peers/build/ocaml5/binarytrees DEPTH [WORKERS]
   WORKERS domains (Pool). The stretch and long-lived trees have their top 3
   levels forked (numagc's make_par); the iterations of each depth are split
   statically over WORKERS tasks, task k taking every WORKERS-th iteration
   (numagc's run_each). *)
type tree = Nil | Node of tree * tree

let rec make d = if d = 0 then Node (Nil, Nil) else Node (make (d - 1), make (d - 1))

let rec make_par d levels =
  if levels = 0 || d = 0 then make d
  else
    let l, r = Pool.fork_join (fun () -> make_par (d - 1) (levels - 1)) (fun () -> make_par (d - 1) (levels - 1)) in
    Node (l, r)

let rec check = function Nil -> 0 | Node (l, r) -> 1 + check l + check r

let min_depth = 4

let () =
  let max_depth = int_of_string Sys.argv.(1) in
  let workers = if Array.length Sys.argv > 2 then int_of_string Sys.argv.(2) else Domain.recommended_domain_count () in
  Pool.run workers @@ fun () ->
  Printf.printf "stretch tree of depth %d\t check: %d\n" (max_depth + 1) (check (make_par (max_depth + 1) 3));
  let long_lived = make_par max_depth 3 in
  let d = ref min_depth in
  while !d <= max_depth do
    let depth = !d and n = 1 lsl (max_depth - !d + min_depth) in
    let part k () =
      let sum = ref 0 and i = ref k in
      while !i < n do sum := !sum + check (make depth); i := !i + workers done;
      !sum
    in
    let tasks = List.init workers (fun k -> Pool.async (part k)) in
    Printf.printf "%d\t trees of depth %d\t check: %d\n" n depth (List.fold_left (fun s t -> s + Pool.await t) 0 tasks);
    d := !d + 2
  done;
  Printf.printf "long lived tree of depth %d\t check: %d\n" max_depth (check long_lived)
