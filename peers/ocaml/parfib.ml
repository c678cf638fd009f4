(* parfib peer (numagc's crates/numagc-bench/src/benchmarks/parfib.rs).
   Usage: peers/build/ocaml/parfib N THRESHOLD
   Sequential baseline: the threshold is accepted and printed but no call is
   forked. Every call returns its result boxed in a heap record, as numagc's
   version does (Sys.opaque_identity keeps the compiler from unboxing it). *)
type box = { v : int }

let rec pfib n =
  if n < 2 then Sys.opaque_identity { v = n }
  else
    let x = pfib (n - 1) in
    let y = pfib (n - 2) in
    Sys.opaque_identity { v = x.v + y.v }

let () =
  let n = int_of_string Sys.argv.(1) and t = int_of_string Sys.argv.(2) in
  Printf.printf "parfib %d (threshold %d) = %d\n" n t (pfib n).v
