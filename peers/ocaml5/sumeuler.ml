(* sumEuler peer, parallel (numagc's crates/numagc-bench/src/benchmarks/sumeuler.rs;
   nofib parallel/sumeuler). Usage: peers/build/ocaml5/sumeuler N CHUNK [WORKERS]
   WORKERS domains (Pool). The interval [N, N-1 .. 0] is cut into chunks of
   CHUNK numbers (each a list), and the chunk array is split in halves down
   to one chunk per task (numagc's par_map). euler k conses the coprime
   j < k into a list and takes its length, as numagc's version allocates. *)
let rec hcf x y = if y = 0 then x else hcf y (x mod y)

let euler k =
  let l = ref [] in
  for j = k - 1 downto 1 do if hcf k j = 1 then l := j :: !l done;
  List.length !l

let chunk_list n chunk i =
  let first = n - (i * chunk) in
  let last = max 0 (first - (chunk - 1)) in
  let l = ref [] in
  for k = last to first do l := k :: !l done;
  !l

let rec sum chunks lo hi =
  if hi - lo = 1 then List.fold_left (fun s k -> s + euler k) 0 chunks.(lo)
  else
    let mid = lo + ((hi - lo) / 2) in
    let a, b = Pool.fork_join (fun () -> sum chunks lo mid) (fun () -> sum chunks mid hi) in
    a + b

let () =
  let n = int_of_string Sys.argv.(1) and chunk = int_of_string Sys.argv.(2) in
  let workers = if Array.length Sys.argv > 3 then int_of_string Sys.argv.(3) else Domain.recommended_domain_count () in
  let chunks = (n + chunk) / chunk in
  let interval = Array.init chunks (chunk_list n chunk) in
  let total = Pool.run workers (fun () -> sum interval 0 chunks) in
  Printf.printf "sumEuler [0..%d] = %d (%d chunks of %d)\n" n total chunks chunk
