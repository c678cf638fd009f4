(* quicksort peer, parallel (numagc's crates/numagc-bench/src/benchmarks/quicksort.rs;
   the NESL/Manticore quicksort over ropes).
   Usage: peers/build/ocaml5/quicksort N RANGE GRAIN SEED [WORKERS]
   WORKERS domains (Pool). The ropes of peers/ocaml/quicksort.ml (numagc's):
   leaves of at most 1024 keys, Cat (len, left, right) nodes, small
   concatenations copied into one leaf, filters reading subtrees of at most
   4096 keys in one go. In parallel, as numagc's: the input is built with
   halves above 8192 keys forked, each filter forks at nodes above 8192 keys,
   the three filters of a step run in parallel and so do the two recursive
   sorts; sequences of at most GRAIN keys are sorted with Array.fast_sort (the
   standard library's merge sort; Array.sort is a heap sort). *)
type seq = Empty | Leaf of int array | Cat of int * seq * seq

let leaf_max = 1024
let chunk = 4 * leaf_max
let filter_grain = 8 * leaf_max

let len = function Empty -> 0 | Leaf w -> Array.length w | Cat (n, _, _) -> n

let mix z =
  let open Int64 in
  let z = add z 0x9e3779b97f4a7c15L in
  let z = mul (logxor z (shift_right_logical z 30)) 0xbf58476d1ce4e5b9L in
  let z = mul (logxor z (shift_right_logical z 27)) 0x94d049bb133111ebL in
  logxor z (shift_right_logical z 31)

let key seed range i = Int64.to_int (Int64.unsigned_rem (mix (Int64.logxor (mix seed) (Int64.of_int i))) range)

let rec nth s i =
  match s with
  | Empty -> invalid_arg "nth"
  | Leaf w -> w.(i)
  | Cat (_, l, r) -> let ll = len l in if i < ll then nth l i else nth r (i - ll)

let rec for_each_leaf s f = match s with Empty -> () | Leaf w -> f w | Cat (_, l, r) -> for_each_leaf l f; for_each_leaf r f

let elements s =
  let out = Array.make (len s) 0 and at = ref 0 in
  for_each_leaf s (fun w -> Array.blit w 0 out !at (Array.length w); at := !at + Array.length w);
  out

let cat a b =
  let al = len a and bl = len b in
  if al = 0 then b
  else if bl = 0 then a
  else if al + bl <= leaf_max then Leaf (Array.append (elements a) (elements b))
  else Cat (al + bl, a, b)

let rec from_words w lo hi =
  if hi - lo <= leaf_max then Leaf (Array.sub w lo (hi - lo))
  else
    let mid = lo + ((hi - lo) / 2) in
    let l = from_words w lo mid in
    let r = from_words w mid hi in
    Cat (hi - lo, l, r)

let rec input seed range lo hi =
  if hi - lo <= leaf_max then Leaf (Array.init (hi - lo) (fun k -> key seed range (lo + k)))
  else
    let mid = lo + ((hi - lo) / 2) in
    let l, r =
      if hi - lo > filter_grain then Pool.fork_join (fun () -> input seed range lo mid) (fun () -> input seed range mid hi)
      else
        let l = input seed range lo mid in
        (l, input seed range mid hi)
    in
    Cat (hi - lo, l, r)

let rec filter s keep =
  match s with
  | Cat (n, l, r) when n > filter_grain ->
      let a, b = Pool.fork_join (fun () -> filter l keep) (fun () -> filter r keep) in
      cat a b
  | Cat (n, l, r) when n > chunk -> let a = filter l keep in cat a (filter r keep)
  | _ ->
      let kept = Array.make (len s) 0 and k = ref 0 in
      for_each_leaf s (fun w -> Array.iter (fun x -> if keep x then (kept.(!k) <- x; incr k)) w);
      if !k = 0 then Empty else from_words kept 0 !k

let sort_small s =
  let keys = elements s in
  if Array.length keys = 0 then Empty
  else (Array.fast_sort (fun (a : int) b -> compare a b) keys; from_words keys 0 (Array.length keys))

let rec quicksort s grain =
  let n = len s in
  if n <= max grain 1 then sort_small s
  else
    let p = nth s (n / 2) in
    let lt = Pool.async (fun () -> filter s (fun x -> x < p)) in
    let eq = Pool.async (fun () -> filter s (fun x -> x = p)) in
    let gt = filter s (fun x -> x > p) in
    let eq = Pool.await eq and lt = Pool.await lt in
    let l, u = Pool.fork_join (fun () -> quicksort lt grain) (fun () -> quicksort gt grain) in
    cat l (cat eq u)

let () =
  let n = int_of_string Sys.argv.(1) and range = Int64.of_string Sys.argv.(2) in
  let grain = int_of_string Sys.argv.(3) and seed = Int64.of_string Sys.argv.(4) in
  let workers = if Array.length Sys.argv > 5 then int_of_string Sys.argv.(5) else Domain.recommended_domain_count () in
  let sorted = Pool.run workers (fun () -> quicksort (if n = 0 then Empty else input seed range 0 n) grain) in
  let total = len sorted in
  let cnt = ref 0 and first = ref 0 and middle = ref 0 and last = ref 0 and sum = ref 0L in
  for_each_leaf sorted (fun w ->
      Array.iter
        (fun x ->
          if !cnt = 0 then first := x;
          if !cnt = total / 2 then middle := x;
          last := x;
          sum := Int64.add (Int64.mul !sum 1_000_003L) (Int64.of_int x);
          incr cnt)
        w);
  Printf.printf "quicksort: %d integers in [0, %Ld) sorted\nfirst %d, middle %d, last %d, checksum %Lu\n" !cnt range !first !middle
    !last !sum
