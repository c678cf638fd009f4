(* gcpauses: the GC pauses of an OCaml 5 program, from OCaml's own
   Runtime_events. Usage: peers/build/ocaml5/gcpauses PROGRAM ARGS...
   Runs PROGRAM with runtime events on (OCAML_RUNTIME_EVENTS_START=1, its ring
   file in a fresh temporary directory, kept at exit by
   OCAML_RUNTIME_EVENTS_PRESERVE so that the last events are read after it
   exits), reads its per-domain ring buffers every 5 ms while it runs (a ring
   holds 2^16 words by default; reading often keeps it from wrapping, and
   wraps are counted as lost events) and once more when it has exited (a
   second domain waits for the exit and wakes the reader at once, so the
   wrapper adds no poll interval to the run's wall time), and prints one
   line on standard error:
     ocaml-pauses count=N total_ns=T p50_ns=.. p99_ns=.. p999_ns=.. max_ns=.. lost_events=L
   PROGRAM's standard output passes through; the exit status is PROGRAM's.
   A pause is a maximal span during which one domain is inside the runtime's
   GC: the outermost runtime_begin .. runtime_end of its ring (a minor
   collection, which stops every domain, a major slice, which stops the one
   domain, the stop-the-world that ends a major cycle, each with everything
   nested in it), the latency that `olly latency` (runtime_events_tools)
   reports. EV_DOMAIN_CONDITION_WAIT is not GC (a domain blocked in
   Condition.wait) and is left out; GC work done for a blocked domain by its
   backup thread is written to the domain's ring and counted. *)
let pauses = ref [||] and count = ref 0 and lost = ref 0

let add ns =
  if !count = Array.length !pauses then pauses := Array.append !pauses (Array.make (max 1024 !count) 0);
  !pauses.(!count) <- ns;
  incr count

(* The open outermost phase of each ring and when it began. *)
let open_phase : (int, Runtime_events.runtime_phase * int64) Hashtbl.t = Hashtbl.create 8

let callbacks =
  let runtime_begin ring ts phase =
    if phase <> Runtime_events.EV_DOMAIN_CONDITION_WAIT && not (Hashtbl.mem open_phase ring) then
      Hashtbl.replace open_phase ring (phase, Runtime_events.Timestamp.to_int64 ts)
  and runtime_end ring ts phase =
    match Hashtbl.find_opt open_phase ring with
    | Some (p, t0) when p = phase ->
        Hashtbl.remove open_phase ring;
        add (Int64.to_int (Int64.sub (Runtime_events.Timestamp.to_int64 ts) t0))
    | _ -> ()
  in
  Runtime_events.Callbacks.create ~runtime_begin ~runtime_end ~lost_events:(fun _ n -> lost := !lost + n) ()

(* The ring file is usable once the runtime has written its metadata header;
   its last field (custom_events_offset, bytes 56..63) is written last. *)
let ready file =
  Sys.file_exists file
  && In_channel.with_open_bin file (fun ic ->
         In_channel.length ic >= 64L
         && (In_channel.seek ic 56L;
             match In_channel.really_input_string ic 8 with
             | Some s -> String.get_int64_le s 0 <> 0L
             | None -> false))

let () =
  if Array.length Sys.argv < 2 then (prerr_endline "usage: gcpauses PROGRAM ARGS..."; exit 2);
  let dir = Filename.temp_dir "gcpauses" "" in
  let env =
    Array.append [| "OCAML_RUNTIME_EVENTS_START=1"; "OCAML_RUNTIME_EVENTS_DIR=" ^ dir; "OCAML_RUNTIME_EVENTS_PRESERVE=1" |]
      (Unix.environment ())
  in
  let args = Array.sub Sys.argv 1 (Array.length Sys.argv - 1) in
  let pid = Unix.create_process_env Sys.argv.(1) args env Unix.stdin Unix.stdout Unix.stderr in
  let file = Filename.concat dir (string_of_int pid ^ ".events") in
  let cursor = ref None in
  let poll () =
    match !cursor with
    | Some c -> ignore (Runtime_events.read_poll c callbacks None)
    | None -> if ready file then cursor := Some (Runtime_events.create_cursor (Some (dir, pid)))
  in
  let exited, wake = Unix.pipe () in
  let waiter = Domain.spawn (fun () ->
    let _, status = Unix.waitpid [] pid in
    Unix.close wake;
    status)
  in
  let rec wait () =
    poll ();
    match Unix.select [ exited ] [] [] 0.005 with
    | [], _, _ -> wait ()
    | _ -> Domain.join waiter
  in
  let status = wait () in
  (* After exit: create the cursor if the program ended before the first
     poll could, then read what remains. *)
  poll ();
  poll ();
  Option.iter Runtime_events.free_cursor !cursor;
  (try Sys.remove file with Sys_error _ -> ());
  (try Sys.rmdir dir with Sys_error _ -> ());
  let a = Array.sub !pauses 0 !count in
  Array.sort compare a;
  let pct q = if !count = 0 then 0 else a.(max 0 (int_of_float (Float.ceil (q /. 100. *. float_of_int !count)) - 1)) in
  Printf.eprintf "ocaml-pauses count=%d total_ns=%d p50_ns=%d p99_ns=%d p999_ns=%d max_ns=%d lost_events=%d\n" !count
    (Array.fold_left ( + ) 0 a) (pct 50.) (pct 99.) (pct 99.9) (pct 100.) !lost;
  match status with
  | Unix.WEXITED c -> exit c
  | Unix.WSIGNALED s | Unix.WSTOPPED s -> Printf.eprintf "gcpauses: %s killed by signal %d\n" Sys.argv.(1) s; exit 128
