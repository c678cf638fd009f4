(* mandelbrot peer, parallel (numagc's crates/numagc-bench/src/benchmarks/mandelbrot.rs).
   Usage: peers/build/ocaml5/mandelbrot SIZE ITERATIONS [WORKERS]
   WORKERS domains (Pool). The rows are split in halves down to one row per
   task; each task builds the row's array of iteration counts and returns
   its sum. Window [-2,1]x[-1.5,1.5]. *)
let iterations c_re c_im limit =
  let re = ref 0.0 and im = ref 0.0 and n = ref 0 in
  while !n < limit && (!re *. !re) +. (!im *. !im) <= 4.0 do
    let next_re = (!re *. !re) -. (!im *. !im) +. c_re in
    im := (2.0 *. !re *. !im) +. c_im;
    re := next_re;
    incr n
  done;
  !n

let rec rows size limit lo hi =
  if hi - lo = 1 then begin
    let step = 3.0 /. float_of_int size in
    let row = Array.init size (fun c -> iterations (-2.0 +. (float_of_int c *. step)) (1.5 -. (float_of_int lo *. step)) limit) in
    Array.fold_left ( + ) 0 row
  end else
    let mid = lo + ((hi - lo) / 2) in
    let a, b = Pool.fork_join (fun () -> rows size limit lo mid) (fun () -> rows size limit mid hi) in
    a + b

let () =
  let size = int_of_string Sys.argv.(1) and limit = int_of_string Sys.argv.(2) in
  let workers = if Array.length Sys.argv > 3 then int_of_string Sys.argv.(3) else Domain.recommended_domain_count () in
  let total = Pool.run workers (fun () -> rows size limit 0 size) in
  Printf.printf "mandelbrot %dx%d, %d iterations: sum of iteration counts %d\n" size size limit total
