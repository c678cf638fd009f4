(* parfib peer, parallel (numagc's crates/numagc-bench/src/benchmarks/parfib.rs).
   Usage: peers/build/ocaml5/parfib N THRESHOLD [WORKERS]
   WORKERS domains (Pool). Calls with n > THRESHOLD fork pfib (n-1) and
   compute pfib (n-2) themselves; calls at or below it run sequentially.
   Every call returns its result boxed in a heap record, as numagc's version
   does (Sys.opaque_identity keeps the compiler from unboxing it). *)
type box = { v : int }

let rec seq n =
  if n < 2 then Sys.opaque_identity { v = n }
  else
    let x = seq (n - 1) in
    let y = seq (n - 2) in
    Sys.opaque_identity { v = x.v + y.v }

let rec pfib n t =
  if n < 2 || n <= t then seq n
  else
    let x, y = Pool.fork_join (fun () -> pfib (n - 1) t) (fun () -> pfib (n - 2) t) in
    Sys.opaque_identity { v = x.v + y.v }

let () =
  let n = int_of_string Sys.argv.(1) and t = int_of_string Sys.argv.(2) in
  let workers = if Array.length Sys.argv > 3 then int_of_string Sys.argv.(3) else Domain.recommended_domain_count () in
  let r = Pool.run workers (fun () -> pfib n t) in
  Printf.printf "parfib %d (threshold %d) = %d\n" n t r.v
