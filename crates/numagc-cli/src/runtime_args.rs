//! Runtime settings as command-line flags, generated from the library's
//! settings table (`numagc::config::settings`), so every setting has the
//! same name on the command line as in `NUMAGC_*` variables and in docs.
//! Environment variables are read first; flags override them.

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use numagc::config::{settings, Config, ConfigBuilder};

#[derive(Clone, Debug, Default)]
pub struct RuntimeArgs {
    /// (setting, value) pairs given on the command line, in order.
    pub values: Vec<(&'static str, String)>,
}

impl RuntimeArgs {
    /// The configuration: defaults, then `NUMAGC_*`, then flags.
    pub fn builder(&self) -> Result<ConfigBuilder, String> {
        let mut b = ConfigBuilder::from_env().map_err(|e| e.to_string())?;
        for (name, value) in &self.values {
            b.set(name, value).map_err(|e| e.to_string())?;
        }
        Ok(b)
    }

    /// The configuration, its warnings printed on standard error (once).
    pub fn config(&self) -> Result<Config, String> {
        let config = self.builder()?.build().map_err(|e| e.to_string())?;
        warn(&config);
        Ok(config)
    }

    /// Whether a setting was given on the command line.
    pub fn has(&self, name: &str) -> bool {
        self.values.iter().any(|(n, _)| *n == name)
    }
}

/// Prints each of `config`'s warnings ([`Config::warnings`]: a default
/// raised, OS CPUs shared) on standard error, each at most once per
/// process, however many configurations a command builds.
pub fn warn(config: &Config) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
    for w in config.warnings() {
        if !said.contains(&w) {
            eprintln!("numagc: warning: {w}");
            said.push(w);
        }
    }
}

/// The settings the benchmark harness takes its own way: as lists
/// (`--vprocs 1,2`, `--plan split,shared`, `--numa-policy
/// local,interleave`), and `trace`, turned on by `--trace FILE`.
pub const HARNESS_LISTS: &[&str] = &["vprocs", "plan", "numa-policy", "trace"];

/// Every setting but `HARNESS_LISTS`, as flags, for `numagc bench`.
#[derive(Clone, Debug, Default)]
pub struct HarnessRuntimeArgs(pub RuntimeArgs);

fn collect(m: &ArgMatches, skip: &[&str]) -> RuntimeArgs {
    let mut a = RuntimeArgs::default();
    for s in settings().iter().filter(|s| !skip.contains(&s.name)) {
        if let Some(v) = m.get_one::<String>(s.name) {
            a.values.push((s.name, v.clone()));
        }
    }
    a
}

impl FromArgMatches for RuntimeArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(collect(m, &[]))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = collect(m, &[]);
        Ok(())
    }
}

impl FromArgMatches for HarnessRuntimeArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(HarnessRuntimeArgs(collect(m, HARNESS_LISTS)))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        self.0 = collect(m, HARNESS_LISTS);
        Ok(())
    }
}

impl Args for HarnessRuntimeArgs {
    fn augment_args(cmd: Command) -> Command {
        augment(cmd, HARNESS_LISTS)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        augment(cmd, HARNESS_LISTS)
    }
}

fn augment(cmd: Command, skip: &[&str]) -> Command {
    let mut cmd = cmd;
    for s in settings().iter().filter(|s| !skip.contains(&s.name)) {
        let mut arg = Arg::new(s.name)
            .long(s.name)
            .help(format!("{} [env: {}]", s.help, s.env))
            .action(ArgAction::Set)
            .help_heading("Runtime settings");
        if s.flag {
            arg = arg
                .num_args(0..=1)
                .require_equals(true)
                .default_missing_value("true")
                .value_name("BOOL");
        } else {
            arg = arg.value_name("VALUE");
        }
        cmd = cmd.arg(arg);
    }
    cmd
}

impl Args for RuntimeArgs {
    fn augment_args(cmd: Command) -> Command {
        augment(cmd, &[])
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        augment(cmd, &[])
    }
}
