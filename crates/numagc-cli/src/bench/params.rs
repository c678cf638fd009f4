//! Benchmark parameters as command-line flags, generated from the suite
//! (`numagc_bench::Param`): `--depth 21` sets binarytrees' `depth`, `--n 38`
//! parfib's `n`. A flag applies to every selected benchmark that has a
//! parameter of that name; one that applies to none is an error.

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use std::collections::BTreeMap;

/// The parameter values given on the command line.
#[derive(Clone, Debug, Default)]
pub struct ParamArgs {
    pub values: Vec<(String, i64)>,
}

/// Every parameter name of the suite, with its help and the benchmarks
/// that have it.
pub fn all_params() -> BTreeMap<&'static str, (String, Vec<&'static str>)> {
    let mut m: BTreeMap<&'static str, (String, Vec<&'static str>)> = BTreeMap::new();
    for b in numagc_bench::all() {
        for p in b.params() {
            let e = m
                .entry(p.name)
                .or_insert_with(|| (String::new(), Vec::new()));
            if !e.0.contains(p.help) {
                if !e.0.is_empty() {
                    e.0.push_str("; ");
                }
                e.0.push_str(p.help);
            }
            e.1.push(b.name());
        }
    }
    m
}

impl FromArgMatches for ParamArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut a = ParamArgs::default();
        a.update_from_arg_matches(m)?;
        Ok(a)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        self.values.clear();
        for name in all_params().keys() {
            if let Some(v) = m.get_one::<i64>(name) {
                self.values.push((name.to_string(), *v));
            }
        }
        Ok(())
    }
}

impl Args for ParamArgs {
    fn augment_args(cmd: Command) -> Command {
        let mut cmd = cmd;
        for (name, (help, benches)) in all_params() {
            cmd = cmd.arg(
                Arg::new(name)
                    .long(name)
                    .help(format!("{help} ({})", benches.join(", ")))
                    .value_name("N")
                    .value_parser(clap::value_parser!(i64))
                    .allow_negative_numbers(true)
                    .action(ArgAction::Set)
                    .help_heading("Benchmark parameters (default: the suite size's)"),
            );
        }
        cmd
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}
