(* coins peer, parallel (numagc's crates/numagc-bench/src/benchmarks/coins.rs;
   nofib parallel/coins payN_par). Usage: peers/build/ocaml5/coins VALUE DEPTH [WORKERS]
   WORKERS domains (Pool). While depth > 0 the right branch (drop the first
   coin value) is forked with depth-1; the left branch (pay one coin) keeps
   its depth unless it used the last coin of a value. Each left step
   allocates a new pair and cons cell. *)
let coins = [ (250, 55); (100, 88); (25, 88); (10, 99); (5, 122); (1, 177) ]

let pay_one c q rest = if q = 1 then rest else (c, q - 1) :: rest

let rec pay_n v = function
  | _ when v = 0 -> 1
  | [] -> 0
  | (c, q) :: rest -> if c > v then pay_n v rest else pay_n (v - c) (pay_one c q rest) + pay_n v rest

let rec pay_n_par depth v cs =
  if depth = 0 then pay_n v cs
  else
    match cs with
    | _ when v = 0 -> 1
    | [] -> 0
    | (c, q) :: rest ->
        if c > v then pay_n_par depth v rest
        else
          let left_depth = if q = 1 then depth - 1 else depth in
          let right, left =
            Pool.fork_join (fun () -> pay_n_par (depth - 1) v rest) (fun () -> pay_n_par left_depth (v - c) (pay_one c q rest))
          in
          left + right

let () =
  let v = int_of_string Sys.argv.(1) and d = int_of_string Sys.argv.(2) in
  let workers = if Array.length Sys.argv > 3 then int_of_string Sys.argv.(3) else Domain.recommended_domain_count () in
  Printf.printf "coins: ways to pay %d (depth %d) = %d\n" v d (Pool.run workers (fun () -> pay_n_par d v coins))
