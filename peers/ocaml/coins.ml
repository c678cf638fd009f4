(* coins peer (numagc's crates/numagc-bench/src/benchmarks/coins.rs; nofib
   parallel/coins payN). Usage: peers/build/ocaml/coins VALUE DEPTH
   Sequential baseline: DEPTH is accepted and printed; payN runs on the
   whole problem. Each left step allocates a new pair and cons cell. *)
let coins = [ (250, 55); (100, 88); (25, 88); (10, 99); (5, 122); (1, 177) ]

let rec pay_n v = function
  | _ when v = 0 -> 1
  | [] -> 0
  | (c, q) :: rest ->
      if c > v then pay_n v rest
      else pay_n (v - c) (if q = 1 then rest else (c, q - 1) :: rest) + pay_n v rest

let () =
  let v = int_of_string Sys.argv.(1) and d = int_of_string Sys.argv.(2) in
  Printf.printf "coins: ways to pay %d (depth %d) = %d\n" v d (pay_n v coins)
