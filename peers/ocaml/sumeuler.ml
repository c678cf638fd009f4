(* sumEuler peer (numagc's crates/numagc-bench/src/benchmarks/sumeuler.rs).
   Usage: peers/build/ocaml/sumeuler N CHUNK
   Sequential baseline: the same chunk lists and the same coprime lists
   (euler k conses the coprime j < k and takes the list's length). *)
let rec hcf x y = if y = 0 then x else hcf y (x mod y)

let euler k =
  let l = ref [] in
  for j = k - 1 downto 1 do if hcf k j = 1 then l := j :: !l done;
  List.length !l

let () =
  let n = int_of_string Sys.argv.(1) and chunk = int_of_string Sys.argv.(2) in
  let chunks = (n + chunk) / chunk in
  let total = ref 0 in
  for i = 0 to chunks - 1 do
    let first = n - (i * chunk) in
    let last = max 0 (first - (chunk - 1)) in
    let l = ref [] in
    for k = last to first do l := k :: !l done;
    total := !total + List.fold_left (fun s k -> s + euler k) 0 !l
  done;
  Printf.printf "sumEuler [0..%d] = %d (%d chunks of %d)\n" n !total chunks chunk
