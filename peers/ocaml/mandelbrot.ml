(* mandelbrot peer (numagc's crates/numagc-bench/src/benchmarks/mandelbrot.rs).
   Usage: peers/build/ocaml/mandelbrot SIZE ITERATIONS
   Sequential baseline: each row an array of iteration counts, summed. *)
let iterations c_re c_im limit =
  let re = ref 0.0 and im = ref 0.0 and n = ref 0 in
  while !n < limit && (!re *. !re) +. (!im *. !im) <= 4.0 do
    let next_re = (!re *. !re) -. (!im *. !im) +. c_re in
    im := (2.0 *. !re *. !im) +. c_im;
    re := next_re;
    incr n
  done;
  !n

let () =
  let size = int_of_string Sys.argv.(1) and limit = int_of_string Sys.argv.(2) in
  let step = 3.0 /. float_of_int size in
  let total = ref 0 in
  for r = 0 to size - 1 do
    let row = Array.init size (fun c -> iterations (-2.0 +. (float_of_int c *. step)) (1.5 -. (float_of_int r *. step)) limit) in
    total := !total + Array.fold_left ( + ) 0 row
  done;
  Printf.printf "mandelbrot %dx%d, %d iterations: sum of iteration counts %d\n" size size limit !total
